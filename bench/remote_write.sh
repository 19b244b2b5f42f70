#!/usr/bin/env bash
# Remote write (issue 38), one run on the realistic batch shape (every batch one sample of each
# of 100 series): the hub with forwarding off, the hub forwarding to a receiver that keeps
# nothing (`rw_sink`: it decompresses and walks each request, then answers 204 — a receiver on
# another machine, so only the hub's own forwarding cost is on these cores), the hub forwarding
# to VictoriaMetrics on the same cores, and VictoriaMetrics itself taking the same pushes (its
# JSON import), in that order and again in reverse, so drift between phases shows. Then the
# forwarding lag under a sustained offered load (open loop at LAG_RATE samples/s). Run by hand:
# bash bench/remote_write.sh
# DUR=20 (seconds per phase), ENGINE=sqlite|postgres, LAG_RATE=30000.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p trusthub --bin trusthub -p trusthub-bench-ingest --bin trusthub-bench-ingest --bin rw_sink >/dev/null
DUR=${DUR:-20}; CONC=${CONC:-64}; AGENTS=${AGENTS:-128}; ENGINE=${ENGINE:-sqlite}
LAG_RATE=${LAG_RATE:-30000}
PG_ADMIN=${PG_ADMIN:-postgres://postgres@127.0.0.1:5432/postgres}
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
VM_PORT=18428; HUB_PORT=18181; SINK_PORT=18429
vmdir=$(mktemp -d)
target/release/rw_sink --listen 127.0.0.1:$SINK_PORT &
sink=$!
victoria-metrics -storageDataPath="$vmdir" -httpListenAddr=127.0.0.1:$VM_PORT -retentionPeriod=100y \
  -loggerLevel=ERROR >/dev/null 2>&1 &
vm=$!
trap 'kill $vm $sink 2>/dev/null; wait $vm 2>/dev/null; rm -rf "$vmdir"' EXIT
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:$VM_PORT/health >/dev/null && break; sleep 0.1; done
echo "VictoriaMetrics $(dpkg-query -W -f '${Version}' victoria-metrics 2>/dev/null), engine $ENGINE, $DUR s per phase"

cpu() { # CPU seconds (user + system) a process has used so far
  awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$1/stat"
}
busy() { # CPU seconds the whole machine has been busy so far (every process, all cores)
  awk '/^cpu /{printf "%.2f", ($2 + $3 + $4 + $7 + $8) / 100}' /proc/stat
}

hub() { # name, forwarding off|on (to VictoriaMetrics)|sink, extra bench args...
  local name=$1 fwd=$2; shift 2
  local dir db=""; dir=$(mktemp -d)
  if [ "$ENGINE" = postgres ]; then
    db=th_rw_bench_$$_$RANDOM; psql "$PG_ADMIN" -qc "CREATE DATABASE $db" >/dev/null
  fi
  local rw=""
  [ "$fwd" = on ] && rw=TRUSTHUB_REMOTE_WRITE_URL=http://127.0.0.1:$VM_PORT/api/v1/write
  [ "$fwd" = sink ] && rw=TRUSTHUB_REMOTE_WRITE_URL=http://127.0.0.1:$SINK_PORT/api/v1/write
  sync
  env ${db:+TRUSTHUB_DATABASE_URL=${PG_ADMIN%/*}/$db} CLOUD_ENCRYPTION_KEY=$KEY TRUSTHUB_RATE_LIMITS=off RUST_LOG=warn \
    ${rw:+"$rw"} \
    TRUSTHUB_ADMIN_PASSWORD='bench password' target/release/trusthub serve --listen 127.0.0.1:$HUB_PORT --data-dir "$dir" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 1 100); do curl -sf http://127.0.0.1:$HUB_PORT/api/v1/health >/dev/null && break; sleep 0.1; done
  case $fwd in
    on) echo "## hub, forwarding on, to VictoriaMetrics ($name)" ;;
    sink) echo "## hub, forwarding on, to the sink ($name)" ;;
    *) echo "## hub, forwarding off ($name)" ;;
  esac
  local vm0 sink0 hub0 all0; vm0=$(cpu $vm); sink0=$(cpu $sink); hub0=$(cpu $pid); all0=$(busy)
  target/release/trusthub-bench-ingest --password 'bench password' --agents "$AGENTS" --concurrency "$CONC" \
    --duration-secs "$DUR" --hub-pid $pid --shape realistic "$@"
  echo "CPU during the phase: hub $(awk "BEGIN{print $(cpu $pid) - $hub0}") s, VictoriaMetrics $(awk "BEGIN{print $(cpu $vm) - $vm0}") s, sink $(awk "BEGIN{print $(cpu $sink) - $sink0}") s, whole machine $(awk "BEGIN{print $(busy) - $all0}") s of $(nproc) cores"
  kill -TERM $pid; wait $pid || true
  rm -rf "$dir" 2>/dev/null || true
  [ -n "$db" ] && psql "$PG_ADMIN" -qc "DROP DATABASE $db WITH (FORCE)" >/dev/null
  return 0
}

vmphase() {
  sync
  echo "## VictoriaMetrics, the same pushes ($1)"
  target/release/trusthub-bench-ingest --password x --agents "$AGENTS" --concurrency "$CONC" \
    --duration-secs "$DUR" --hub-pid $vm --shape realistic --vm-only http://127.0.0.1:$VM_PORT
}

hub "closed loop" off
hub "closed loop" sink --watch-lag
hub "closed loop" on --watch-lag
vmphase "closed loop"
vmphase "closed loop, again"
hub "closed loop, again" on --watch-lag
hub "closed loop, again" sink --watch-lag
hub "closed loop, again" off
echo "sink received (series samples requests): $(curl -sf http://127.0.0.1:$SINK_PORT/counts)"
hub "open loop at $LAG_RATE samples/s" on --watch-lag --rate "$LAG_RATE" --warmup-secs 2
