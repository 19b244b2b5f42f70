//! Administration shared by first start and the `trusthub admin` commands (CONTRACT 2).
//! These work on the database directly, so they also work while a hub is running.

use crate::passwords;
use crate::state::now;
use crate::store::password_resets;
use crate::store::sessions;
use crate::store::tenants;
use crate::store::tenants::Tenant;
use crate::store::users;
use crate::store::users::User;
use serde_json::json;
use trusthub_core::{Role, audit as ev, validate};
use trusthub_store::{Db, StoreError, audit, meta};

/// What went wrong, for a person at a terminal.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// A value was refused.
    #[error("{0}")]
    Invalid(String),
    /// The database refused or failed.
    #[error("{0}")]
    Store(#[from] StoreError),
}

fn check_owner(email: &str, password: &str) -> Result<String, AdminError> {
    let email =
        validate::email(email).map_err(|m| AdminError::Invalid(format!("owner email {m}")))?;
    validate::password(password).map_err(|m| AdminError::Invalid(format!("owner password {m}")))?;
    Ok(email)
}

/// Creates a tenant with its first owner.
pub async fn create_tenant(
    db: &Db,
    name: &str,
    owner_email: &str,
    owner_password: &str,
) -> Result<(Tenant, User), AdminError> {
    let name = validate::name(name).map_err(|m| AdminError::Invalid(format!("tenant name {m}")))?;
    let email = check_owner(owner_email, owner_password)?;
    let hash =
        passwords::hash_blocking(owner_password).map_err(|e| AdminError::Invalid(e.to_string()))?;
    let now = now();
    let mut tx = db.begin().await?;
    let tenant = tenants::insert(&mut tx, &name, now)
        .await
        .map_err(|e| match e {
            StoreError::Conflict(_) => {
                AdminError::Invalid(format!("a tenant named {name} exists already"))
            }
            e => e.into(),
        })?;
    let user = users::insert(&mut tx, tenant.tenant_id(), &email, &hash, Role::Owner, now)
        .await
        .map_err(|e| match e {
            StoreError::Conflict(_) => AdminError::Invalid(format!("{email} is already a user")),
            e => e.into(),
        })?;
    audit::append(
        &mut tx,
        tenant.tenant_id(),
        &audit::NewEntry {
            event_type: ev::TENANT_CREATED,
            actor: "cli".into(),
            subject: format!("tenant:{}", tenant.id),
            details: json!({"name": name, "owner": email}),
            ip: None,
            request_id: None,
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok((tenant, user))
}

/// Sets a user's password, ending all their sessions and voiding their reset tokens.
pub async fn reset_password(db: &Db, email: &str, password: &str) -> Result<User, AdminError> {
    let email = validate::email(email).map_err(|m| AdminError::Invalid(format!("email {m}")))?;
    validate::password(password).map_err(|m| AdminError::Invalid(format!("password {m}")))?;
    let hash =
        passwords::hash_blocking(password).map_err(|e| AdminError::Invalid(e.to_string()))?;
    let now = now();
    let mut tx = db.begin().await?;
    let user = users::find_by_email_any_tenant(&mut tx, &email)
        .await?
        .ok_or_else(|| AdminError::Invalid(format!("no user with email {email}")))?;
    users::set_password(&mut tx, user.tenant_id, user.id, &hash, now).await?;
    let ended = sessions::delete_for_user(&mut tx, user.tenant_id, user.id).await?;
    password_resets::revoke_for_user(&mut tx, user.tenant_id, user.id, now).await?;
    audit::append(
        &mut tx,
        user.tenant_id,
        &audit::NewEntry {
            event_type: ev::PASSWORD_RESET,
            actor: "cli".into(),
            subject: audit::user_actor(user.id),
            details: json!({"via": "admin reset-password", "sessions_ended": ended}),
            ip: None,
            request_id: None,
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(user)
}

/// The first owner, made on an empty database.
#[derive(Debug, Clone)]
pub struct Bootstrapped {
    /// Their email.
    pub email: String,
    /// The password, when it was generated (the caller prints it once).
    pub generated_password: Option<String>,
}

/// CONTRACT 2 first start: on a database without tenants, creates tenant `default` and its
/// owner. Exactly one of several processes starting at once does it: the claim of the
/// `bootstrap` key and the creation share one transaction.
pub async fn bootstrap(
    db: &Db,
    email: &str,
    password: Option<&str>,
) -> Result<Option<Bootstrapped>, AdminError> {
    let generated = match password {
        Some(_) => None,
        None => Some(
            trusthub_core::secret::new_token("")
                .map_err(|e| AdminError::Invalid(e.to_string()))?
                .chars()
                .take(24)
                .collect::<String>(),
        ),
    };
    let password = password.or(generated.as_deref()).unwrap_or_default();
    let email = check_owner(email, password)?;
    let hash =
        passwords::hash_blocking(password).map_err(|e| AdminError::Invalid(e.to_string()))?;
    let now = now();
    let mut tx = db.begin().await?;
    if meta::has_tenants(&mut tx).await? || !meta::claim(&mut tx, "bootstrap", &email, now).await? {
        return Ok(None);
    }
    let tenant = tenants::insert(&mut tx, "default", now).await?;
    users::insert(&mut tx, tenant.tenant_id(), &email, &hash, Role::Owner, now).await?;
    audit::append(
        &mut tx,
        tenant.tenant_id(),
        &audit::NewEntry {
            event_type: ev::TENANT_CREATED,
            actor: "system".into(),
            subject: format!("tenant:{}", tenant.id),
            details: json!({"name": "default", "owner": email, "first_start": true}),
            ip: None,
            request_id: None,
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(Some(Bootstrapped {
        email,
        generated_password: generated,
    }))
}
