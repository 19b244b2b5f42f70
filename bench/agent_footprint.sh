#!/usr/bin/env bash
# The agent's footprint (issue 63): a release agent with every collector at its defaults
# (inventory, dependency discovery, drift, compliance, honeypots, DNA, its WebSocket) enrolled
# with a local hub, beside Prometheus' node_exporter (Debian's prometheus-node-exporter)
# scraped at the same interval, in the same window. Start-up (the first STARTUP seconds: the
# first inventory and scans) is measured apart from the steady state (the next DUR seconds).
# CPU from /proc/<pid>/stat (children included: what the agent runs counts), RSS sampled every
# 5 s. Run as root by hand: bash bench/agent_footprint.sh   (DUR=600 STARTUP=120 INTERVAL=60;
# NO_BUILD=1 with BIN= and AGENT= other builds)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${NO_BUILD:-}" ] || cargo build --release -p trusthub -p trusthub-agent >/dev/null
DUR=${DUR:-600}; STARTUP=${STARTUP:-120}; INTERVAL=${INTERVAL:-60}; PORT=${PORT:-18182}
BIN=${BIN:-$PWD/target/release/trusthub}
AGENT=${AGENT:-$PWD/target/release/trusthub-agent}
NODE_EXPORTER=${NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
H=http://127.0.0.1:$PORT/api/v1

TRUSTHUB_ADMIN_PASSWORD='bench password' RUST_LOG=warn "$BIN" serve --listen 127.0.0.1:$PORT \
  --data-dir "$work/hub" >"$work/hub.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do curl -sf $H/health >/dev/null && break; sleep 0.1; done
curl -sf -c "$work/jar" -H 'content-type: application/json' \
  -d '{"email":"admin@trusthub.local","password":"bench password"}' $H/auth/login >/dev/null
ENROLL=$(curl -sf -b "$work/jar" -X POST -H 'content-type: application/json' -d '{}' \
  $H/agents/enrollment-tokens | jq -r .token)

# ticks (utime + stime + cutime + cstime) of a process
ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$1/stat"; }
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
hz=$(getconf CLK_TCK)

RUST_LOG=warn "$AGENT" run --hub "http://127.0.0.1:$PORT" --enroll "$ENROLL" \
  --interval-secs "$INTERVAL" --state-dir "$work/agent" >"$work/agent.log" 2>&1 &
agent=$!; pids+=($agent)
"$NODE_EXPORTER" --web.listen-address=127.0.0.1:19100 >"$work/node.log" 2>&1 &
node=$!; pids+=($node)
( while sleep "$INTERVAL"; do curl -sf http://127.0.0.1:19100/metrics >/dev/null || true; done ) &
pids+=($!)

sleep "$STARTUP"
a0=$(ticks $agent); n0=$(ticks $node)
echo "## start-up (first $STARTUP s): agent $(awk -v t="$a0" -v hz=$hz -v d="$STARTUP" 'BEGIN { printf "%.2f s CPU = %.2f %% of a core", t / hz, t / hz * 100 / d }'), peak RSS $(awk '/^VmHWM/ { printf "%.1f MiB", $2 / 1024 }' /proc/$agent/status)"
samples=0; a_sum=0; n_sum=0; a_max=0; n_max=0
end=$(( $(date +%s) + DUR ))
while [ "$(date +%s)" -lt "$end" ]; do
  a=$(rss $agent); n=$(rss $node)
  a_sum=$((a_sum + a)); n_sum=$((n_sum + n)); samples=$((samples + 1))
  [ "$a" -gt "$a_max" ] && a_max=$a; [ "$n" -gt "$n_max" ] && n_max=$n
  sleep 5
done
a1=$(ticks $agent); n1=$(ticks $node)
awk -v a="$((a1 - a0))" -v n="$((n1 - n0))" -v hz=$hz -v d="$DUR" -v as="$a_sum" -v ns="$n_sum" \
  -v s=$samples -v am=$a_max -v nm=$n_max -v i="$INTERVAL" 'BEGIN {
  ac = a / hz * 100 / d; nc = n / hz * 100 / d
  printf "## steady state (%d s, pushes and scrapes every %d s)\n", d, i
  printf "%-16s %8s %12s %12s\n", "", "CPU", "RSS mean", "RSS max"
  printf "%-16s %6.3f %% %8.1f MiB %8.1f MiB\n", "trusthub-agent", ac, as / s / 1024, am / 1024
  printf "%-16s %6.3f %% %8.1f MiB %8.1f MiB\n", "node_exporter", nc, ns / s / 1024, nm / 1024
  printf "ratio agent / node_exporter: CPU %.2fx, RSS %.2fx\n", (nc > 0 ? ac / nc : 0), (ns > 0 ? as / ns : 0)
}'
echo "agent log: $(grep -c ' WARN \| ERROR ' "$work/agent.log" || true) warnings or errors"
