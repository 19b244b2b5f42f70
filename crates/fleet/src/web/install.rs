//! The agent install flow (CONTRACT 27): `GET /install.sh`, a POSIX shell script with this
//! hub's public address in it, and `GET /downloads/trusthub-agent-linux-<arch>` (with its
//! `.sha256` beside it), the agent build this hub serves for its own architecture. Both are
//! public: a new host has no credential yet, and the script holds no secret (the enrollment
//! token is the script's argument).

use crate::service::download::{AgentDownload, download_name, unreadable};
use crate::state::AppState;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use tokio::io::AsyncReadExt;
use trusthub_platform::error::ApiError;

/// `GET /downloads/{name}`: the agent binary (`trusthub-agent-linux-<arch>`) or its checksum
/// (`….sha256`, in `sha256sum` format).
pub async fn download(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    let served = download_name();
    let download = state.part::<AgentDownload>();
    if name == format!("{served}.sha256") {
        return match download.sha256().await {
            Ok(sum) => (
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                format!("{sum}  {served}\n"),
            )
                .into_response(),
            Err(e) => e.into_response(),
        };
    }
    if name != served {
        return ApiError::NotFound("agent build (this hub serves only its own platform's)")
            .into_response();
    }
    let path = match download.file() {
        Ok(p) => p.to_owned(),
        Err(e) => return e.into_response(),
    };
    let (file, len) = match tokio::fs::File::open(&path).await {
        Ok(f) => match f.metadata().await {
            Ok(m) => (f, m.len()),
            Err(e) => return unreadable(&path)(e).into_response(),
        },
        Err(e) => return unreadable(&path)(e).into_response(),
    };
    // Streamed in chunks: a download costs a buffer, not the binary's size, in memory.
    let chunks = futures_util::stream::unfold(file, |mut file| async move {
        let mut buf = vec![0u8; 64 * 1024];
        match file.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok::<_, std::io::Error>(buf), file))
            }
            Err(e) => Some((Err(e), file)),
        }
    });
    (
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
            (header::CONTENT_LENGTH, len.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{served}\""),
            ),
        ],
        Body::from_stream(chunks),
    )
        .into_response()
}

/// `GET /install.sh`: the install script for this hub.
pub async fn script(State(state): State<AppState>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/x-shellscript; charset=utf-8")],
        install_script(&state.public_url, std::env::consts::ARCH),
    )
        .into_response()
}

/// The one-line install command for a host, with `token` filled in.
pub fn one_liner(public_url: &str, token: &str) -> String {
    format!(
        "curl -fsSL {}/install.sh | sh -s -- --enroll {token}",
        public_url.trim_end_matches('/')
    )
}

/// The script, with the hub's address and architecture written in (single-quoted: neither
/// holds a quote, the address is a URL the operator configured).
pub fn install_script(public_url: &str, arch: &str) -> String {
    SCRIPT
        .replace("@HUB@", &public_url.trim_end_matches('/').replace('\'', ""))
        .replace("@ARCH@", arch)
}

const SCRIPT: &str = r#"#!/bin/sh
# Installs the Trusthub agent from the hub at @HUB@ and enrolls this host.
#
#   curl -fsSL @HUB@/install.sh | sh -s -- --enroll <token>
#
# Downloads the agent for linux-@ARCH@, checks its SHA-256 against the hub's, installs it,
# registers with the hub and, where systemd runs, installs and starts its service.
set -eu

hub='@HUB@'
arch_served='@ARCH@'
token=''
bin_dir=/usr/local/bin
state_dir=/var/lib/trusthub-agent
unit_dir=/etc/systemd/system
ca_cert=''
service=auto

say() { printf 'trusthub install: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
usage() {
    cat <<USAGE
usage: sh install.sh --enroll <token> [options]
  --enroll TOKEN     the enrollment token from the hub (Agents > Enroll a host)
  --bin-dir DIR      where the agent binary goes (default /usr/local/bin)
  --state-dir DIR    the agent's keys and registration (default /var/lib/trusthub-agent)
  --unit-dir DIR     where the systemd unit goes (default /etc/systemd/system)
  --ca-cert FILE     trust this CA (PEM) for the hub's HTTPS certificate
  --no-service       enroll only; do not install or start a systemd service
USAGE
}
need_value() { [ "$2" -ge 2 ] || { say "$1 needs a value"; usage >&2; exit 2; }; }

while [ $# -gt 0 ]; do
    case "$1" in
        --enroll) need_value "$1" $#; token=$2; shift 2 ;;
        --enroll=*) token=${1#*=}; shift ;;
        --bin-dir) need_value "$1" $#; bin_dir=$2; shift 2 ;;
        --bin-dir=*) bin_dir=${1#*=}; shift ;;
        --state-dir) need_value "$1" $#; state_dir=$2; shift 2 ;;
        --state-dir=*) state_dir=${1#*=}; shift ;;
        --unit-dir) need_value "$1" $#; unit_dir=$2; shift 2 ;;
        --unit-dir=*) unit_dir=${1#*=}; shift ;;
        --ca-cert) need_value "$1" $#; ca_cert=$2; shift 2 ;;
        --ca-cert=*) ca_cert=${1#*=}; shift ;;
        --no-service) service=no; shift ;;
        -h|--help) usage; exit 0 ;;
        *) say "unknown option: $1"; usage >&2; exit 2 ;;
    esac
done
[ -n "$token" ] || { say "--enroll <token> is required"; usage >&2; exit 2; }
[ -z "$ca_cert" ] || [ -r "$ca_cert" ] || die "cannot read --ca-cert $ca_cert"

os=$(uname -s)
[ "$os" = Linux ] || die "the agent runs on Linux; this host runs $os"
case $(uname -m) in
    x86_64|amd64) arch=x86_64 ;;
    aarch64|arm64) arch=aarch64 ;;
    *) arch=$(uname -m) ;;
esac
[ "$arch" = "$arch_served" ] || die "this hub serves the agent for linux-$arch_served; this host is linux-$arch (build trusthub-agent for it with cargo build --release -p trusthub-agent)"

fetch() {
    if command -v curl >/dev/null 2>&1; then
        if [ -n "$ca_cert" ]; then curl -fsSL --cacert "$ca_cert" -o "$2" "$1"; else curl -fsSL -o "$2" "$1"; fi
    elif command -v wget >/dev/null 2>&1; then
        if [ -n "$ca_cert" ]; then wget -q --ca-certificate="$ca_cert" -O "$2" "$1"; else wget -q -O "$2" "$1"; fi
    else
        die "neither curl nor wget is installed"
    fi
}
sha256() {
    if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1
    elif command -v shasum >/dev/null 2>&1; then shasum -a 256 "$1" | cut -d' ' -f1
    elif command -v openssl >/dev/null 2>&1; then openssl dgst -sha256 -r "$1" | cut -d' ' -f1
    else die "no sha256sum, shasum or openssl to check the download with"
    fi
}

file=trusthub-agent-linux-$arch
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
say "downloading $hub/downloads/$file"
fetch "$hub/downloads/$file" "$tmp/trusthub-agent" || die "download failed: $hub/downloads/$file"
fetch "$hub/downloads/$file.sha256" "$tmp/sum" || die "download failed: $hub/downloads/$file.sha256"
expected=$(cut -d' ' -f1 < "$tmp/sum")
actual=$(sha256 "$tmp/trusthub-agent")
[ -n "$expected" ] && [ "$expected" = "$actual" ] || die "checksum mismatch: the hub says $expected, the download is $actual"

mkdir -p "$bin_dir"
bin=$bin_dir/trusthub-agent
# Beside it, then renamed: a running agent's binary is never half-written.
cp "$tmp/trusthub-agent" "$bin.new"
chmod 0755 "$bin.new"
mv -f "$bin.new" "$bin"
say "installed $bin (sha256 $actual)"

# The token goes through the environment, not the command line other users can read.
if [ -n "$ca_cert" ]; then
    TRUSTHUB_ENROLL=$token "$bin" enroll --hub "$hub" --state-dir "$state_dir" --ca-cert "$ca_cert"
else
    TRUSTHUB_ENROLL=$token "$bin" enroll --hub "$hub" --state-dir "$state_dir"
fi

if [ "$service" = no ] || [ ! -d /run/systemd/system ]; then
    [ "$service" = no ] || say "systemd is not running here: no service installed"
    say "start the agent with: $bin run --state-dir $state_dir"
    exit 0
fi
"$bin" install --state-dir "$state_dir" --unit-dir "$unit_dir" --binary "$bin" >/dev/null
if [ -n "$ca_cert" ]; then
    cp "$ca_cert" "$state_dir/hub-ca.pem"
    mkdir -p "$unit_dir/trusthub-agent.service.d"
    printf '[Service]\nEnvironment=TRUSTHUB_AGENT_CA_CERT=%s\n' "$state_dir/hub-ca.pem" \
        > "$unit_dir/trusthub-agent.service.d/ca.conf"
fi
systemctl daemon-reload
systemctl enable --now trusthub-agent
say "the trusthub-agent service runs; see it with: systemctl status trusthub-agent"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_carries_the_hub_and_the_architecture() {
        let s = install_script("https://hub.example.com/", "x86_64");
        assert!(s.contains("hub='https://hub.example.com'\n"));
        assert!(s.contains("arch_served='x86_64'\n"));
        assert!(!s.contains('@'), "every placeholder filled");
        assert_eq!(
            one_liner("https://hub.example.com/", "tok"),
            "curl -fsSL https://hub.example.com/install.sh | sh -s -- --enroll tok"
        );
    }
}
