#!/usr/bin/env bash
# A steady fleet, soaked (issue 63): a release hub on SQLite or PostgreSQL, AGENTS simulated
# agents (`--bin soak`: sockets open, 100 series every 10 s, inventories every 6 h spread, one
# alert rule firing for a tenth, CHECKS hub checks of the hub's own /health) and a signed-in
# client reading the overview, the agents page and two API lists every 2 s, for DUR seconds.
# Prints one line per minute, the database's size before and after, and the hub log's
# warnings and errors. Run by hand: bash bench/soak.sh   (ENGINE=sqlite|postgres DUR=7200
# AGENTS=1000 CHECKS=200; BIN= and SOAK= other builds, with NO_BUILD=1; LOG=file keeps the
# hub's log; RUST_LOG=info,trusthub::overview=debug logs each overview's parts). Do not
# edit this file while it runs: bash reads it as it goes.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${NO_BUILD:-}" ] || cargo build --release -p trusthub -p trusthub-bench-ingest >/dev/null
ENGINE=${ENGINE:-sqlite}; DUR=${DUR:-300}; AGENTS=${AGENTS:-1000}; CHECKS=${CHECKS:-200}
PG=${PG:-postgres://postgres@127.0.0.1:5432}
BIN=${BIN:-$PWD/target/release/trusthub}
SOAK=${SOAK:-$PWD/target/release/soak}
PORT=${PORT:-18181}
work=$(mktemp -d)
ulimit -n "$(ulimit -Hn)"   # the generator holds a socket per agent and its pushes
db=()
size() { du -sh "$work/data" | cut -f1; }
if [ "$ENGINE" = postgres ]; then
  psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS th_soak" -c "CREATE DATABASE th_soak"
  db=(TRUSTHUB_DATABASE_URL="$PG/th_soak" CLOUD_ENCRYPTION_KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f)
  size() { psql -Atc "SELECT pg_size_pretty(pg_database_size('th_soak'))" "$PG/postgres"; }
fi
env "${db[@]}" TRUSTHUB_RATE_LIMITS=off TRUSTHUB_OUTBOUND_ALLOW_CIDRS=127.0.0.0/8 RUST_LOG="${RUST_LOG:-info}" \
  TRUSTHUB_ADMIN_PASSWORD='bench password' "$BIN" serve --listen 127.0.0.1:$PORT \
  --data-dir "$work/data" >"$work/hub.log" 2>&1 &
hub=$!
keep() { [ -z "${LOG:-}" ] || cp "$work/hub.log" "$LOG" 2>/dev/null || true; }
trap 'kill $hub 2>/dev/null; wait $hub 2>/dev/null; keep; rm -rf "$work"' EXIT
for _ in $(seq 1 300); do curl -sf http://127.0.0.1:$PORT/api/v1/health >/dev/null && break; sleep 0.1; done
if [ "$ENGINE" = postgres ] && [ "$(psql -Atc 'SHOW autovacuum' "$PG/postgres")" = off ]; then
  # This machine's server runs without autovacuum (a CI setting); do what README asks of an
  # operator who keeps it off, so the database is measured as a maintained one.
  echo "the server's autovacuum is off: VACUUM (ANALYZE) every 5 minutes instead"
  (while sleep 300; do psql -qc "VACUUM (ANALYZE)" "$PG/th_soak" || true; done) &
  vacuum=$!
  trap 'kill $hub $vacuum 2>/dev/null; wait $hub 2>/dev/null; keep; rm -rf "$work"' EXIT
fi
echo "## $ENGINE: $AGENTS agents, $CHECKS hub checks, $DUR s (hub pid $hub)"
echo "database at start: $(size)"
"$SOAK" --hub http://127.0.0.1:$PORT --password 'bench password' --hub-pid $hub \
  ${db:+--db-procs postgres} --agents "$AGENTS" --checks "$CHECKS" \
  --check-url "http://127.0.0.1:$PORT/api/v1/health" --duration-secs "$DUR" ${STRICT:+--strict}
echo "database at the end: $(size)"
echo "hub log: $(grep -c . "$work/hub.log") lines, $(grep -c ' WARN ' "$work/hub.log" || true) warnings, $(grep -c ' ERROR ' "$work/hub.log" || true) errors"
grep -E ' (WARN|ERROR) ' "$work/hub.log" | sed -E 's/^[^ ]+ +//' | sort | uniq -c | sort -rn | head -10 || true
