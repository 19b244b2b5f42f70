#!/usr/bin/env bash
# Ingest benchmark on SQLite and PostgreSQL (issue 3). Run by hand: bash bench/ingest.sh
# Loopback only; each phase is bounded by DUR seconds. RATE=100000 offers that many samples/s
# on a fixed schedule (open loop) instead of sending as fast as answers come back; WARMUP=2
# sends 2 s of the same load first and leaves it out of the figures. SHAPE=realistic (the
# default: every batch one sample of each of 100 series, as an agent pushes) or flattering (10
# series x 10 samples); REPEAT=1 re-sends the same points under new batch ids. HUB_BIN=path runs
# another build of the hub (a before/after comparison in one session). ONLY=postgres skips SQLite;
# HUBS=2 runs two hubs on the PostgreSQL database (the cluster case), half the agents on each;
# NO_BUILD=1 uses the binaries in target/release as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${NO_BUILD:-}" ] || cargo build --release -p trusthub -p trusthub-bench-ingest >/dev/null
DUR=${DUR:-20}; CONC=${CONC:-64}; AGENTS=${AGENTS:-128}; SHAPE=${SHAPE:-realistic}
PG_ADMIN=${PG_ADMIN:-postgres://postgres@127.0.0.1:5432/postgres}
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f

phase() {
  local name=$1 url=$2 raw=$3 dir dir2 pid2='' more=(); dir=$(mktemp -d); dir2=$(mktemp -d)
  # Nothing of the build or of an earlier phase still being written back under the measurement.
  sync
  env ${url:+TRUSTHUB_DATABASE_URL=$url} CLOUD_ENCRYPTION_KEY=$KEY TRUSTHUB_RATE_LIMITS=off RUST_LOG=warn \
    TRUSTHUB_ADMIN_PASSWORD='bench password' "${HUB_BIN:-target/release/trusthub}" serve --listen 127.0.0.1:18181 --data-dir "$dir" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 1 100); do curl -sf http://127.0.0.1:18181/api/v1/health >/dev/null && break; sleep 0.1; done
  if [ -n "$url" ] && [ "${HUBS:-1}" = 2 ]; then
    # The cluster case: a second hub on the same database; half the agents push to it.
    env TRUSTHUB_DATABASE_URL=$url CLOUD_ENCRYPTION_KEY=$KEY TRUSTHUB_RATE_LIMITS=off RUST_LOG=warn \
      TRUSTHUB_ADMIN_PASSWORD='bench password' "${HUB_BIN:-target/release/trusthub}" serve --listen 127.0.0.1:18182 --data-dir "$dir2" >/dev/null 2>&1 &
    pid2=$!
    for _ in $(seq 1 100); do curl -sf http://127.0.0.1:18182/api/v1/health >/dev/null && break; sleep 0.1; done
    more=(--also-hub http://127.0.0.1:18182 --also-hub-pid "$pid2")
  fi
  # PostgreSQL: the plain ceiling (100-row unnest inserts from 8 connections) in the same run.
  [ -n "$url" ] && more+=(--unnest-db "$raw")
  echo "## $name${pid2:+ (2 hubs)}"
  target/release/trusthub-bench-ingest --password 'bench password' --agents "$AGENTS" --concurrency "$CONC" \
    --duration-secs "$DUR" --hub-pid $pid --raw-db "$raw" --shape "$SHAPE" ${REPEAT:+--repeat} \
    ${RATE:+--rate "$RATE"} ${WARMUP:+--warmup-secs "$WARMUP"} "${more[@]}"
  [ -n "$pid2" ] && { kill -TERM "$pid2"; wait "$pid2" || true; }
  kill -TERM $pid; wait $pid || true
  rm -rf "$dir" "$dir2"
}

if [ "${ONLY:-}" != postgres ]; then
  rawdir=$(mktemp -d)
  phase SQLite "" "sqlite://$rawdir/raw.db"
  rm -rf "$rawdir"
fi
[ "${ONLY:-}" = sqlite ] && exit 0
db=th_bench_$$; raw=th_bench_raw_$$
psql "$PG_ADMIN" -qc "CREATE DATABASE $db" -c "CREATE DATABASE $raw" >/dev/null
phase PostgreSQL "${PG_ADMIN%/*}/$db" "${PG_ADMIN%/*}/$raw"
psql "$PG_ADMIN" -qc "DROP DATABASE $db WITH (FORCE)" -c "DROP DATABASE $raw WITH (FORCE)" >/dev/null
