#!/usr/bin/env bash
# Ingest on SQLite against VictoriaMetrics (issue 63), measured by two generators on the same
# pushes: the Rust bench (`trusthub-bench-ingest`, realistic shape) and an independent one
# (`bench/independent_push.mjs`: Node's HTTP client, JSON.stringify, Ed25519, as an agent
# builds a batch), the independent one on both the agent-like shape (labels: cpu, mount,
# iface) and the Rust bench's. Phases in ABBA order so drift shows. Run by hand:
#   bash bench/ingest_compare.sh        (DUR=20 CONC=64 AGENTS=128; NO_BUILD=1)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${NO_BUILD:-}" ] || cargo build --release -p trusthub -p trusthub-bench-ingest >/dev/null
export DUR=${DUR:-20} CONC=${CONC:-64} AGENTS=${AGENTS:-128}
VM_PORT=18428; HUB=http://127.0.0.1:18181
vmdir=$(mktemp -d)
victoria-metrics -storageDataPath="$vmdir" -httpListenAddr=127.0.0.1:$VM_PORT -retentionPeriod=100y \
  -loggerLevel=ERROR >/dev/null 2>&1 &
vm=$!
trap 'kill $vm 2>/dev/null; wait $vm 2>/dev/null; rm -rf "$vmdir"' EXIT
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:$VM_PORT/health >/dev/null && break; sleep 0.1; done
cpu() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$1/stat"; }
run() { # target (hub|vm), generator (rust|node|node-bench)
  local dir pid='' target=$1 gen=$2 c0; dir=$(mktemp -d); sync
  if [ "$target" = hub ]; then
    env TRUSTHUB_RATE_LIMITS=off RUST_LOG=warn TRUSTHUB_ADMIN_PASSWORD='bench password' \
      target/release/trusthub serve --listen 127.0.0.1:18181 --data-dir "$dir" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do curl -sf $HUB/api/v1/health >/dev/null && break; sleep 0.1; done
  fi
  echo "## $target, generator $gen"
  local server=${pid:-$vm}; c0=$(cpu "$server")
  case $target/$gen in
    hub/rust) target/release/trusthub-bench-ingest --password 'bench password' --agents "$AGENTS" \
        --concurrency "$CONC" --duration-secs "$DUR" --shape realistic | grep -E '^hub:|generator' ;;
    vm/rust) target/release/trusthub-bench-ingest --password x --agents "$AGENTS" --concurrency "$CONC" \
        --duration-secs "$DUR" --shape realistic --vm-only http://127.0.0.1:$VM_PORT | grep -vE '^agents' ;;
    hub/node) node bench/independent_push.mjs hub $HUB 'bench password' ;;
    hub/node-bench) SHAPE=bench node bench/independent_push.mjs hub $HUB 'bench password' ;;
    vm/node) node bench/independent_push.mjs vm http://127.0.0.1:$VM_PORT ;;
    vm/node-bench) SHAPE=bench node bench/independent_push.mjs vm http://127.0.0.1:$VM_PORT ;;
  esac
  echo "server CPU: $(awk "BEGIN{print $(cpu "$server") - $c0}") s"
  if [ -n "$pid" ]; then kill -TERM "$pid"; wait "$pid" || true; fi
  rm -rf "$dir"
}
for p in hub/rust vm/rust hub/node vm/node hub/node-bench vm/node-bench \
         vm/node-bench hub/node-bench vm/node hub/node vm/rust hub/rust; do
  run "${p%/*}" "${p#*/}"
done
