#!/usr/bin/env bash
# Ingest over mTLS against plain HTTP in the same run (issue 19). Run by hand: bash bench/mtls.sh
# Three phases on SQLite, each a fresh hub and the realistic shape (every batch one sample of
# each of 100 series), every simulated agent with its own connections:
#   plain  - http://
#   tls    - https:// with --tls-self, no client certificate
#   mtls   - https:// with --tls-self, every agent presenting its client certificate (the hub
#            cross-checks each request: CN/OU, revocation, expiry, last_seen)
# Loopback only; each phase is bounded by DUR seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p trusthub -p trusthub-bench-ingest >/dev/null
DUR=${DUR:-20}; CONC=${CONC:-64}; AGENTS=${AGENTS:-128}
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f

phase() {
  local name=$1 dir; dir=$(mktemp -d); shift
  sync
  local tls=() scheme=http curl_ca=()
  if [ "$name" != plain ]; then tls=(--tls-self); scheme=https; fi
  env CLOUD_ENCRYPTION_KEY=$KEY TRUSTHUB_RATE_LIMITS=off RUST_LOG=warn \
    TRUSTHUB_ADMIN_PASSWORD='bench password' target/release/trusthub serve --listen 127.0.0.1:18181 \
    --data-dir "$dir" "${tls[@]}" >/dev/null 2>&1 &
  local pid=$!
  [ "$scheme" = https ] && curl_ca=(--cacert "$dir/hub-ca.pem")
  for _ in $(seq 1 200); do
    [ "$scheme" = http ] || [ -s "$dir/hub-ca.pem" ] || { sleep 0.1; continue; }
    curl -sf "${curl_ca[@]}" "$scheme://127.0.0.1:18181/api/v1/health" >/dev/null && break; sleep 0.1
  done
  echo "## $name"
  target/release/trusthub-bench-ingest --hub "$scheme://127.0.0.1:18181" --password 'bench password' \
    --agents "$AGENTS" --concurrency "$CONC" --duration-secs "$DUR" --hub-pid $pid \
    ${curl_ca:+--ca-cert "$dir/hub-ca.pem"} "$@"
  kill -TERM $pid; wait $pid || true
  rm -rf "$dir"
}

phase plain
phase tls
phase mtls --client-certs
