#!/usr/bin/env bash
# Hostile inputs against a running hub (issue 27): the hub's peak RSS above the RSS before
# each input, its answer and time. SQLite, loopback. Run by hand: bash bench/hostile.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${NO_BUILD:-}" ] || cargo build --release -p trusthub -p trusthub-bench-ingest >/dev/null
dir=$(mktemp -d)
RUST_LOG=warn TRUSTHUB_RATE_LIMITS=off TRUSTHUB_ADMIN_PASSWORD='bench password' \
  target/release/trusthub serve --listen 127.0.0.1:18182 --data-dir "$dir" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:18182/api/v1/health >/dev/null && break; sleep 0.1; done
echo "idle RSS: $(awk '/VmRSS/ {print int($2/1024)}' /proc/$pid/status) MiB"
target/release/hostile --hub-pid "$pid" --password 'bench password'
kill -TERM $pid; wait $pid || true
rm -rf "$dir"
