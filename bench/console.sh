#!/usr/bin/env bash
# Emergency console: 50 sessions each printing 1 MB through a real agent and the hub (issue
# 33). Run by hand: bash bench/console.sh   (ONLY=pg for PostgreSQL; SESSIONS=, BYTES=)
# Starts a hub (SQLite in a temp dir, or a fresh PostgreSQL database) and a real agent with
# --allow-console on this host, runs --bin console, stops both. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p trusthub -p trusthub-agent -p trusthub-bench-ingest --bin trusthub \
  --bin trusthub-agent --bin console >/dev/null
PG_ADMIN=${PG_ADMIN:-postgres://postgres@127.0.0.1:5432/postgres}
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
PORT=18182
H=http://127.0.0.1:$PORT/api/v1
dir=$(mktemp -d)
url=""
if [ "${ONLY:-sqlite}" = pg ]; then
  db=th_console_$$
  psql "$PG_ADMIN" -qc "CREATE DATABASE $db" >/dev/null
  url="${PG_ADMIN%/*}/$db"
fi
env ${url:+TRUSTHUB_DATABASE_URL=$url} CLOUD_ENCRYPTION_KEY=$KEY TRUSTHUB_RATE_LIMITS=off RUST_LOG=warn \
  TRUSTHUB_ADMIN_PASSWORD='bench password' target/release/trusthub serve --listen 127.0.0.1:$PORT \
  --data-dir "$dir/hub" >"$dir/hub.log" 2>&1 &
hub=$!
for _ in $(seq 1 100); do curl -sf $H/health >/dev/null && break; sleep 0.1; done
curl -s -c "$dir/jar" -H 'content-type: application/json' \
  -d '{"email":"admin@trusthub.local","password":"bench password"}' $H/auth/login >/dev/null
token=$(curl -s -b "$dir/jar" -H 'content-type: application/json' -d '{}' $H/agents/enrollment-tokens \
  | sed -E 's/.*"token":"([^"]+)".*/\1/')
target/release/trusthub-agent --hub http://127.0.0.1:$PORT --enroll "$token" --state-dir "$dir/agent" \
  --allow-console >"$dir/agent.log" 2>&1 &
agent=$!
target/release/console --hub http://127.0.0.1:$PORT --password 'bench password' --hub-pid $hub \
  --agent-pid $agent --sessions "${SESSIONS:-50}" --bytes "${BYTES:-1048576}" || tail -n 5 "$dir/hub.log" "$dir/agent.log"
echo "recordings: $(du -sh "$dir/hub/console" | cut -f1)"
kill -TERM $agent $hub; wait $agent $hub || true
rm -rf "$dir"
if [ -n "$url" ]; then psql "$PG_ADMIN" -qc "DROP DATABASE $db WITH (FORCE)" >/dev/null; fi
