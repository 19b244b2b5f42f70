//! Roles, API-token scopes and TOTP purposes (CONTRACT 2 and 3).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A user's role in a tenant; each role includes every right of the roles before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Read everything of the tenant.
    Viewer,
    /// Create and change apps, SLOs, alert rules, webhooks, suppressions, topology, diagrams.
    Operator,
    /// Sensitive operations: restart, console, emergency, auto-patch, rotations.
    Admin,
    /// Users, invitations and tenant settings.
    Owner,
}

impl Role {
    /// Every role, lowest first.
    pub const ALL: [Role; 4] = [Role::Viewer, Role::Operator, Role::Admin, Role::Owner];

    /// The wire name of the role.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
            Role::Owner => "owner",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no known role, scope or purpose.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown value `{0}`")]
pub struct UnknownName(pub String);

impl FromStr for Role {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownName(s.to_owned()))
    }
}

/// What an API token may do (CONTRACT 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenScope {
    /// Read-only: the CI token of SPEC 5.2. Acts as at most a viewer.
    Read,
    /// Acts with the role of the user who created it.
    Write,
    /// Only sends AI traces (SPEC 2.11); no other endpoint accepts it.
    AiIngest,
}

impl TokenScope {
    /// Every scope.
    pub const ALL: [TokenScope; 3] = [TokenScope::Read, TokenScope::Write, TokenScope::AiIngest];

    /// The wire name of the scope.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenScope::Read => "read",
            TokenScope::Write => "write",
            TokenScope::AiIngest => "ai_ingest",
        }
    }

    /// The highest role a request made with this token acts as, given its user's role.
    /// `None` when the scope grants no access to the user API at all.
    pub fn effective_role(self, user_role: Role) -> Option<Role> {
        match self {
            TokenScope::Read => Some(user_role.min(Role::Viewer)),
            TokenScope::Write => Some(user_role),
            TokenScope::AiIngest => None,
        }
    }
}

impl FromStr for TokenScope {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TokenScope::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownName(s.to_owned()))
    }
}

/// What a TOTP challenge token may be spent on (CONTRACT 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TotpPurpose {
    /// `POST /apps/:id/restart`.
    AppRestart,
    /// `POST /agents/:id/console/start`.
    ConsoleStart,
    /// Turning an auto-patch flag on.
    AgentAutoPatch,
    /// `POST /cve/auto-update-all`.
    AutoUpdateAll,
    /// `POST /agents/:id/emergency`.
    AgentEmergency,
}

impl TotpPurpose {
    /// Every purpose.
    pub const ALL: [TotpPurpose; 5] = [
        TotpPurpose::AppRestart,
        TotpPurpose::ConsoleStart,
        TotpPurpose::AgentAutoPatch,
        TotpPurpose::AutoUpdateAll,
        TotpPurpose::AgentEmergency,
    ];

    /// The wire name of the purpose.
    pub fn as_str(self) -> &'static str {
        match self {
            TotpPurpose::AppRestart => "app_restart",
            TotpPurpose::ConsoleStart => "console_start",
            TotpPurpose::AgentAutoPatch => "agent_auto_patch",
            TotpPurpose::AutoUpdateAll => "auto_update_all",
            TotpPurpose::AgentEmergency => "agent_emergency",
        }
    }
}

impl FromStr for TotpPurpose {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TotpPurpose::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownName(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_2_roles_are_ordered_each_including_the_one_before() {
        assert!(Role::Viewer < Role::Operator);
        assert!(Role::Operator < Role::Admin);
        assert!(Role::Admin < Role::Owner);
        for r in Role::ALL {
            assert_eq!(r.as_str().parse::<Role>(), Ok(r));
        }
        assert!("root".parse::<Role>().is_err());
    }

    #[test]
    fn contract_2_read_token_acts_as_viewer_at_most_and_ai_ingest_reads_nothing() {
        assert_eq!(
            TokenScope::Read.effective_role(Role::Owner),
            Some(Role::Viewer)
        );
        assert_eq!(
            TokenScope::Write.effective_role(Role::Admin),
            Some(Role::Admin)
        );
        assert_eq!(TokenScope::AiIngest.effective_role(Role::Owner), None);
        for s in TokenScope::ALL {
            assert_eq!(s.as_str().parse::<TokenScope>(), Ok(s));
        }
    }

    #[test]
    fn contract_3_purposes_round_trip() {
        for p in TotpPurpose::ALL {
            assert_eq!(p.as_str().parse::<TotpPurpose>(), Ok(p));
        }
        assert!("anything".parse::<TotpPurpose>().is_err());
    }
}
