#!/usr/bin/env bash
# Hub API throughput and memory, on SQLite and on PostgreSQL. Run by hand:
#   bash bench/api.sh            (needs wrk: apt-get install wrk)
# Loopback only; every run is bounded by wrk's -d. Results go to stdout; copy them into
# bench/RESULTS.md with the date and the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p trusthub >/dev/null
BIN=target/release/trusthub
DUR=${DUR:-15s}
CONC=${CONC:-32}
PG_ADMIN=${PG_ADMIN:-postgres://postgres@127.0.0.1:5432/postgres}
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f

rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

run() {
  local name=$1 url=$2
  local dir; dir=$(mktemp -d)
  env ${url:+TRUSTHUB_DATABASE_URL=$url} CLOUD_ENCRYPTION_KEY=$KEY TRUSTHUB_RATE_LIMITS=off RUST_LOG=warn \
    TRUSTHUB_ADMIN_PASSWORD='bench password' $BIN serve --listen 127.0.0.1:18181 --data-dir "$dir" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 1 100); do curl -sf http://127.0.0.1:18181/api/v1/health >/dev/null && break; sleep 0.1; done
  local H=http://127.0.0.1:18181/api/v1
  curl -s -c "$dir/jar" -H 'content-type: application/json' \
    -d '{"email":"admin@trusthub.local","password":"bench password"}' $H/auth/login >/dev/null
  local token; token=$(curl -s -b "$dir/jar" -H 'content-type: application/json' \
    -d '{"name":"bench","scope":"read"}' $H/api-tokens | sed -E 's/.*"token":"([^"]+)".*/\1/')
  echo "## $name"
  echo "idle RSS: $(rss_kib $pid) KiB"
  echo "### GET /api/v1/health (database ping), $CONC connections, $DUR"
  wrk -t2 -c"$CONC" -d"$DUR" --latency $H/health | grep -E 'Requests/sec|50%|99%|Non-2xx'
  echo "### GET /api/v1/me with a bearer token (token lookup + tenant read), $CONC connections, $DUR"
  wrk -t2 -c"$CONC" -d"$DUR" --latency -H "authorization: Bearer $token" $H/me | grep -E 'Requests/sec|50%|99%|Non-2xx'
  cat > "$dir/login.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"email":"admin@trusthub.local","password":"bench password"}'
wrk.headers["content-type"] = "application/json"
LUA
  echo "### POST /api/v1/auth/login (argon2id verify + session insert), 4 connections, $DUR"
  wrk -t2 -c4 -d"$DUR" --latency -s "$dir/login.lua" $H/auth/login | grep -E 'Requests/sec|50%|99%|Non-2xx'
  echo "RSS after load: $(rss_kib $pid) KiB"
  kill -TERM $pid; wait $pid || true
  rm -rf "$dir"
}

run "SQLite" ""
db=th_bench_$$
psql "$PG_ADMIN" -qc "CREATE DATABASE $db" >/dev/null
run "PostgreSQL" "${PG_ADMIN%/*}/$db"
psql "$PG_ADMIN" -qc "DROP DATABASE $db WITH (FORCE)" >/dev/null
