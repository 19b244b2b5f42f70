//! What the load generators share.

/// CPU seconds (user + system) a process has used so far, from `/proc/<pid>/stat`.
pub fn proc_cpu_secs(pid: u32) -> Option<f64> {
    stat_ticks(pid, &[11, 12])
}

/// The sum of `/proc/<pid>/stat` fields, counted after the command name (utime and stime,
/// fields 14 and 15, are 11 and 12; cutime and cstime 13 and 14), in seconds.
fn stat_ticks(pid: u32, at: &[usize]) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces: count from its closing parenthesis.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let mut sum = 0.0;
    for &i in at {
        sum += fields.get(i)?.parse::<f64>().ok()?;
    }
    Some(sum / 100.0)
}

/// The machine's busy and total CPU seconds so far (`/proc/stat`'s first line: busy is all
/// but idle and iowait), for how much of the machine a run used.
pub fn machine_cpu() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks: Vec<f64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    let total: f64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3)? + ticks.get(4)?;
    Some(((total - idle) / 100.0, total / 100.0))
}

/// CPU seconds of every process named `name`, with what their children that have ended used
/// (a PostgreSQL backend that closes moves its time into the postmaster's, so the sum never
/// goes back).
pub fn procs_cpu(name: &str) -> f64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == name)
        })
        .filter_map(|pid| stat_ticks(pid, &[11, 12, 13, 14]))
        .sum()
}

/// The CPU a process used between two readings of [`proc_cpu_secs`], per stored sample.
pub fn cpu_line(who: &str, before: Option<f64>, pid: Option<u32>, samples: u64) -> Option<String> {
    let used = pid.and_then(proc_cpu_secs)? - before?;
    Some(format!(
        "{who} CPU in the timed window (warm-up included): {used:.2} s, {:.2} µs per sample",
        used * 1e6 / samples.max(1) as f64
    ))
}

/// A memory figure of a process, in MiB, from `/proc/<pid>/status` (`pid` `None`: this
/// process): `field` is `VmRSS` (now) or `VmHWM` (peak).
pub fn proc_mib(pid: Option<u32>, field: &str) -> Option<u64> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".into(),
    };
    let status = std::fs::read_to_string(path).ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb / 1024)
}

/// A hub for an in-process benchmark: port 0, a known owner password, every periodic job
/// pushed a day away (the benchmark calls what it measures itself), a 2048-bit CA, on
/// `database_url` (SQLite in `data_dir` when `None`; PostgreSQL gets a fixed encryption key).
pub fn quiet_settings(
    data_dir: std::path::PathBuf,
    database_url: Option<String>,
) -> trusthub_hub::Settings {
    let mut s = trusthub_hub::Settings::with_data_dir(data_dir);
    s.listen = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    s.admin_password = Some("bench password".into());
    s.sections.edit(|m: &mut trusthub_hub::sections::Monitors| {
        m.liveness_interval_secs = 86_400;
        m.rule_eval_interval_secs = 86_400;
    });
    s.sections
        .edit(|v: &mut trusthub_hub::sections::Slo| v.slo_eval_interval_secs = 86_400);
    s.sections.edit(|v: &mut trusthub_hub::sections::Vulns| {
        v.cve_scan_check_secs = 86_400;
        v.supply_chain_check_secs = 86_400;
        v.osv_pull_check_secs = 86_400;
    });
    s.ca_key_bits = 2048;
    if database_url.is_some() {
        s.encryption_key =
            Some("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f".into());
    }
    s.db.database_url = database_url;
    s
}

/// The first-start owner's tenant.
pub async fn owner_tenant(
    db: &trusthub_store::Db,
) -> Result<trusthub_store::TenantId, Box<dyn std::error::Error>> {
    let mut c = db.conn().await?;
    Ok(
        trusthub_identity::raw::users::find_by_email_any_tenant(&mut c, "admin@trusthub.local")
            .await?
            .ok_or("no owner")?
            .tenant_id,
    )
}

/// Registers bench host number `h` of `tenant` (Debian 12, no tags) directly in the store.
pub async fn insert_host(
    tx: &mut trusthub_store::Tx,
    tenant: trusthub_store::TenantId,
    h: usize,
    now: time::OffsetDateTime,
) -> Result<uuid::Uuid, trusthub_store::StoreError> {
    insert_host_with(tx, tenant, h, &format!("hash-{h}"), &[], now).await
}

/// [`insert_host`] with its agent token's hash and the action kinds it allows.
pub async fn insert_host_with(
    tx: &mut trusthub_store::Tx,
    tenant: trusthub_store::TenantId,
    h: usize,
    token_hash: &str,
    actions: &[String],
    now: time::OffsetDateTime,
) -> Result<uuid::Uuid, trusthub_store::StoreError> {
    trusthub_fleet::raw::insert_agent(
        tx,
        tenant,
        &trusthub_fleet::raw::Registration {
            machine_id: &format!("m{h}"),
            hostname: &format!("host-{h}"),
            os: "Debian GNU/Linux 12",
            arch: "x86_64",
            agent_version: "bench",
            signing_pubkey: "00",
            tags: &[],
        },
        token_hash,
        actions,
        now,
    )
    .await
}

/// The findings shape of the auto-patch and Trust Score benchmarks: OSV records in `osv` for
/// `os` Debian 12 packages (`lib<k>` 1.0-1, fixed in 1.0-2, CVSS `os_cvss`) and `deps` npm
/// dependencies (`dep<k>` 1.0.0, fixed in 1.0.1, CVSS `deps_cvss`); the host inventory they
/// match (every host has them all; one npm project, `/srv/app`).
pub fn findings_shape(
    osv: &std::path::Path,
    os: usize,
    deps: usize,
    os_cvss: &str,
    deps_cvss: &str,
) -> std::io::Result<serde_json::Value> {
    use serde_json::json;
    for k in 0..os {
        let r = json!({"id": format!("DSA-{k}"), "modified": "2026-01-01T00:00:00Z",
            "severity": [{"type": "CVSS_V3", "score": os_cvss}],
            "affected": [{"package": {"ecosystem": "Debian:12", "name": format!("lib{k}")},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "1.0-2"}]}]}]});
        std::fs::write(osv.join(format!("DSA-{k}.json")), r.to_string())?;
    }
    for k in 0..deps {
        let r = json!({"id": format!("GHSA-{k}"), "modified": "2026-01-01T00:00:00Z",
            "severity": [{"type": "CVSS_V3", "score": deps_cvss}],
            "affected": [{"package": {"ecosystem": "npm", "name": format!("dep{k}")},
                "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "1.0.1"}]}]}]});
        std::fs::write(osv.join(format!("GHSA-{k}.json")), r.to_string())?;
    }
    Ok(
        json!({"collected_at": "2026-11-26T00:00:00Z", "os": {"id": "debian", "version": "12"},
        "packages": (0..os).map(|k| json!({"manager": "dpkg", "name": format!("lib{k}"), "version": "1.0-1"})).collect::<Vec<_>>(),
        "app_dependencies": (0..deps).map(|k| json!({"project_path": "/srv/app", "ecosystem": "npm",
            "name": format!("dep{k}"), "version": "1.0.0"})).collect::<Vec<_>>()}),
    )
}

/// CVSS 3.1 vectors of the benchmarks' findings.
pub const CVSS_CRITICAL: &str = "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H";
/// A HIGH one.
pub const CVSS_HIGH: &str = "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N";

/// Signs the first-start owner in at `api` (`http://host/api/v1`); the session cookie
/// (`name=value`) to send with later requests.
pub async fn owner_cookie(
    http: &reqwest::Client,
    api: &str,
    password: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    let login = http
        .post(format!("{api}/auth/login"))
        .json(&serde_json::json!({"email": "admin@trusthub.local", "password": password}))
        .send()
        .await?;
    Ok(login
        .headers()
        .get("set-cookie")
        .ok_or("login failed")?
        .to_str()?
        .split(';')
        .next()
        .unwrap_or_default()
        .to_owned())
}

/// A new admin of the owner's tenant (invited by `owner`, the owner's cookie) with TOTP
/// enrolled: their session cookie, their TOTP secret and the unix time whose step the
/// enrolment spent (a gated request sends the code of the next step).
pub async fn admin_with_totp(
    http: &reqwest::Client,
    api: &str,
    owner: &str,
) -> Result<(String, Vec<u8>, i64), Box<dyn std::error::Error>> {
    use serde_json::{Value, json};
    let email = format!("a-{}@bench.example", uuid::Uuid::new_v4().simple());
    let inv: Value = http
        .post(format!("{api}/invitations"))
        .header("cookie", owner)
        .json(&json!({"email": email, "role": "admin"}))
        .send()
        .await?
        .json()
        .await?;
    let acc = http
        .post(format!("{api}/auth/accept-invite"))
        .json(&json!({"token": inv["token"], "password": "bench password 1"}))
        .send()
        .await?;
    let user = acc
        .headers()
        .get("set-cookie")
        .ok_or("accept-invite set no cookie")?
        .to_str()?
        .split(';')
        .next()
        .unwrap_or_default()
        .to_owned();
    let setup: Value = http
        .post(format!("{api}/auth/totp/setup"))
        .header("cookie", &user)
        .json(&json!({}))
        .send()
        .await?
        .json()
        .await?;
    let secret = trusthub_core::totp::secret_from_base32(
        setup["secret_base32"].as_str().unwrap_or_default(),
    )
    .ok_or("no TOTP secret")?;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    http.post(format!("{api}/auth/totp/verify"))
        .header("cookie", &user)
        .json(&json!({"code": trusthub_core::totp::code_at(&secret, now)}))
        .send()
        .await?
        .error_for_status()?;
    Ok((user, secret, now))
}

/// The `p` quantile (0 to 1) of `v`, nearest rank.
pub fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// `runs` GETs of `url` with the session `cookie`: each one's milliseconds, and the size of
/// the last answer (an answer that is not 2xx is an error).
pub async fn timed_get(
    http: &reqwest::Client,
    url: &str,
    cookie: &str,
    runs: usize,
) -> Result<(Vec<f64>, usize), Box<dyn std::error::Error>> {
    let mut times = Vec::with_capacity(runs);
    let mut size = 0;
    for _ in 0..runs {
        let t = std::time::Instant::now();
        let r = http.get(url).header("cookie", cookie).send().await?;
        if !r.status().is_success() {
            return Err(format!("{url}: {}", r.status()).into());
        }
        size = r.bytes().await?.len();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    Ok((times, size))
}

/// Registers a simulated agent with the enrollment token `enroll` as a real agent does (an
/// Ed25519 key of its own, the body signed): its id, its token and its key.
pub async fn register_agent(
    http: &reqwest::Client,
    api: &str,
    enroll: &str,
    hostname: &str,
    tags: &[String],
) -> Result<(String, String, ed25519_dalek::SigningKey), Box<dyn std::error::Error + Send + Sync>> {
    let key = ed25519_dalek::SigningKey::from_bytes(&trusthub_core::secret::random_bytes::<32>()?);
    let body = serde_json::json!({
        "machine_id": format!("{hostname}-{}", uuid::Uuid::new_v4().simple()),
        "hostname": hostname, "os": "Debian 12", "arch": "x86_64", "agent_version": "bench",
        "signing_pubkey": trusthub_core::secret::hex(key.verifying_key().as_bytes()),
        "tags": tags})
    .to_string();
    let r: serde_json::Value = http
        .post(format!("{api}/agents/register"))
        .bearer_auth(enroll)
        .header("content-type", "application/json")
        .header(
            "x-service-signature",
            trusthub_core::agent::sign_header(&key, body.as_bytes()),
        )
        .body(body)
        .send()
        .await?
        .json()
        .await?;
    let field = |f: &str| {
        r[f].as_str()
            .map(str::to_owned)
            .ok_or("registration failed")
    };
    Ok((field("agent_id")?, field("agent_token")?, key))
}

/// An app `agent` watches (`app_type` `systemd`, `process`, ...), expected running, with the
/// default counters: what the benchmarks insert below the services.
pub fn watched_app<'a>(
    agent: uuid::Uuid,
    name: &'a str,
    app_type: &'a str,
    identifier: &'a str,
) -> trusthub_monitors::raw::apps::NewApp<'a> {
    trusthub_monitors::raw::apps::NewApp {
        agent_id: Some(agent),
        name,
        app_type,
        identifier,
        owner_email: None,
        runbook_url: None,
        notes: None,
        expected_state: "running",
        restart_command: None,
        endpoint: None,
        interval_seconds: None,
        timeout_seconds: None,
        retries: 2,
        recoveries: 1,
        expected_status: None,
        keyword: None,
        tls_min_days: None,
        grace_seconds: None,
        push_token: None,
        expected_values: None,
        json_query: None,
        first_due: None,
    }
}
