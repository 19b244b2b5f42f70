#!/usr/bin/env bash
# Backup and restore (issue 62, CONTRACT 31): a hub filled by AGENTS agents pushing the
# realistic shape (every batch one sample of each of 100 series) for FILL seconds, then
# `trusthub backup`, `backup verify` and `trusthub restore` (into a new database of the same
# engine, and across engines), each timed with its peak RSS (/usr/bin/time). The ceiling in
# the same run: `sqlite3 .backup` of the same file, and `pg_dump -Fc` / `pg_restore` of the
# same database. Run by hand: bash bench/backup.sh   (FILL=60 AGENTS=1000; ONLY=sqlite|postgres;
# BIN= and INGEST= other builds, with NO_BUILD=1)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${NO_BUILD:-}" ] || cargo build --release -p trusthub -p trusthub-bench-ingest >/dev/null
FILL=${FILL:-60}; AGENTS=${AGENTS:-1000}
PG=${PG:-postgres://postgres@127.0.0.1:5432}
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
BIN=${BIN:-$PWD/target/release/trusthub}
INGEST=${INGEST:-$PWD/target/release/trusthub-bench-ingest}
work=$(mktemp -d)
ulimit -n "$(ulimit -Hn)"   # the generator holds a connection per agent
trap 'rm -rf "$work"' EXIT

timed() { # label, command...: wall seconds and peak RSS
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/out" 2>&1 || { cat "$work/out"; return 1; }
  read -r secs kib <"$work/time"
  printf '%-44s %7.1f s  %6d MiB peak RSS\n' "$label" "$secs" $((kib / 1024))
}

fill() { # data dir, database URL (empty for SQLite)
  env ${2:+TRUSTHUB_DATABASE_URL=$2} CLOUD_ENCRYPTION_KEY=$KEY TRUSTHUB_RATE_LIMITS=off RUST_LOG=warn \
    TRUSTHUB_ADMIN_PASSWORD='bench password' "$BIN" serve --listen 127.0.0.1:18181 --data-dir "$1" \
    >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 1 300); do curl -sf http://127.0.0.1:18181/api/v1/health >/dev/null && break; sleep 0.1; done
  "$INGEST" --password 'bench password' --agents "$AGENTS" \
    --concurrency 64 --duration-secs "$FILL" --shape realistic | grep -E "^hub:"
  kill -TERM $pid; wait $pid || true
}

if [ "${ONLY:-sqlite}" = sqlite ] || [ -z "${ONLY:-}" ]; then
  echo "## SQLite ($AGENTS agents, $FILL s of pushes)"
  fill "$work/s" ""
  echo "database file: $(du -h "$work/s/trusthub.db" | cut -f1)"
  timed "sqlite3 .backup (ceiling)" sqlite3 "$work/s/trusthub.db" ".backup '$work/copy.db'"
  timed "trusthub backup" "$BIN" backup --data-dir "$work/s" --out "$work/s.tar.gz"
  echo "archive: $(du -h "$work/s.tar.gz" | cut -f1)"
  timed "trusthub backup verify" "$BIN" backup verify "$work/s.tar.gz"
  timed "trusthub restore into SQLite" "$BIN" restore --from "$work/s.tar.gz" --data-dir "$work/s2"
  psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS th_bench_restore" -c "CREATE DATABASE th_bench_restore"
  timed "trusthub restore into PostgreSQL" "$BIN" restore --from "$work/s.tar.gz" \
    --database-url "$PG/th_bench_restore"
  psql "$PG/postgres" -qc "DROP DATABASE th_bench_restore"
  rm -rf "$work/s" "$work/s2" "$work/copy.db"
fi
if [ "${ONLY:-postgres}" = postgres ] || [ -z "${ONLY:-}" ]; then
  echo "## PostgreSQL ($AGENTS agents, $FILL s of pushes)"
  psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS th_bench_src" -c "CREATE DATABASE th_bench_src"
  fill "$work/p" "$PG/th_bench_src"
  echo "database: $(psql -Atc "SELECT pg_size_pretty(pg_database_size('th_bench_src'))" "$PG/postgres")"
  timed "pg_dump -Fc (ceiling)" pg_dump -Fc -f "$work/p.dump" "$PG/th_bench_src"
  timed "trusthub backup" env CLOUD_ENCRYPTION_KEY=$KEY "$BIN" backup --database-url "$PG/th_bench_src" \
    --out "$work/p.tar.gz"
  echo "archive: $(du -h "$work/p.tar.gz" | cut -f1); pg_dump: $(du -h "$work/p.dump" | cut -f1)"
  psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS th_bench_pgr" -c "CREATE DATABASE th_bench_pgr"
  timed "pg_restore (ceiling)" pg_restore -d "$PG/th_bench_pgr" "$work/p.dump"
  psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS th_bench_restore" -c "CREATE DATABASE th_bench_restore"
  timed "trusthub restore into PostgreSQL" "$BIN" restore --from "$work/p.tar.gz" \
    --database-url "$PG/th_bench_restore"
  timed "trusthub restore into SQLite" "$BIN" restore --from "$work/p.tar.gz" --data-dir "$work/p2"
  psql "$PG/postgres" -qc "DROP DATABASE th_bench_restore" -c "DROP DATABASE th_bench_pgr" \
    -c "DROP DATABASE th_bench_src"
fi
