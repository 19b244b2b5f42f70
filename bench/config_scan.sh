#!/usr/bin/env bash
# Configuration scans beside the push loop (issue 59, CONTRACT 30): a real agent watching
# 10,000 files — 9,999 small ones and a 40 GiB sparse one (a scan reports at most 10,000), pushing every 10 s and scanning every 10 s, against
# a real hub (SQLite). Two runs: the default size cap (64 MiB: the sparse file is reported
# `too_large`, never read) and no cap worth the name (the agent reads all 40 GiB of zeros on
# every scan, the worst an operator could set). Reported: the gaps between the agent's
# consecutive samples as the hub stored them (a push delayed by a scan would show as a gap
# over one interval), scans done and skipped, their durations, and the agent's CPU.
# Run by hand: bash bench/config_scan.sh   (DUR=seconds per run, default 150)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${NO_BUILD:-}" ] || cargo build --release -p trusthub -p trusthub-agent --bin trusthub \
  --bin trusthub-agent >/dev/null
DUR=${DUR:-150}
PORT=18183
H=http://127.0.0.1:$PORT/api/v1
dir=$(mktemp -d)
watched=$dir/watched
mkdir -p "$watched"
python3 - "$watched" <<'PY'
import os, sys
root = sys.argv[1]
for d in range(100):
    os.makedirs(f"{root}/d{d:02}", exist_ok=True)
    for f in range(100):
        if d == 99 and f == 99:
            break
        with open(f"{root}/d{d:02}/f{f:03}.conf", "w") as fh:
            fh.write(f"key{d}_{f} = value\n" * 200)
PY
truncate -s 40G "$watched/sparse.img"
echo "watched: $(find "$watched" -type f | wc -l) files, $(du -sh --apparent-size "$watched" | cut -f1) apparent, $(du -sh "$watched" | cut -f1) on disk"

run() {
  local cap=$1 label=$2
  rm -rf "$dir/hub" "$dir/agent"
  RUST_LOG=warn TRUSTHUB_RATE_LIMITS=off TRUSTHUB_ADMIN_PASSWORD='bench password' \
    target/release/trusthub serve --listen 127.0.0.1:$PORT --data-dir "$dir/hub" >"$dir/hub.log" 2>&1 &
  local hub=$!
  for _ in $(seq 1 100); do curl -sf $H/health >/dev/null && break; sleep 0.1; done
  curl -s -c "$dir/jar" -H 'content-type: application/json' \
    -d '{"email":"admin@trusthub.local","password":"bench password"}' $H/auth/login >/dev/null
  local token
  token=$(curl -s -b "$dir/jar" -H 'content-type: application/json' -d '{}' $H/agents/enrollment-tokens \
    | sed -E 's/.*"token":"([^"]+)".*/\1/')
  RUST_LOG=trusthub_agent=info target/release/trusthub-agent --hub http://127.0.0.1:$PORT \
    --enroll "$token" --state-dir "$dir/agent" --config-max-file-bytes "$cap" >"$dir/agent.log" 2>&1 &
  local agent=$!
  local id=""
  for _ in $(seq 1 100); do
    id=$(curl -s -b "$dir/jar" $H/agents | python3 -c 'import json,sys; a=json.load(sys.stdin); print(a[0]["id"] if a else "")' 2>/dev/null || true)
    [ -n "$id" ] && break; sleep 0.2
  done
  curl -sf -b "$dir/jar" -X PUT -H 'content-type: application/json' $H/agents/$id/governance \
    -d "{\"ingest_interval_secs\":10,\"inventory_interval_secs\":3600,\"tags\":[],\"allowed_actions\":[],\"config_scan_interval_secs\":10,\"config_paths\":[\"$watched/**\"]}" >/dev/null
  local t0 cpu0
  t0=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  cpu0=$(awk '{print $14+$15}' /proc/$agent/stat)
  sleep "$DUR"
  local cpu1
  cpu1=$(awk '{print $14+$15}' /proc/$agent/stat)
  curl -s -b "$dir/jar" "$H/agents/$id/metrics?name=cpu.percent&from=$t0" >"$dir/points.json"
  python3 - "$dir/points.json" "$dir/agent.log" "$label" "$DUR" "$cpu0" "$cpu1" <<'PY'
import json, sys, re, datetime
points, log, label, dur, cpu0, cpu1 = sys.argv[1:]
series = [s for s in json.load(open(points))["series"] if not s["labels"]]
ts = [datetime.datetime.fromisoformat(p[0].replace("Z", "+00:00")) for p in series[0]["points"]]
gaps = [(b - a).total_seconds() for a, b in zip(ts, ts[1:])]
text = open(log).read()
done = [int(m) for m in re.findall(r"elapsed_ms=(\d+)", text)]
skipped = len(re.findall(r"this one is skipped", text))
hz = 100
print(f"{label}: {len(ts)} pushes in {dur} s; gap between pushes max {max(gaps):.1f} s, "
      f"delayed past one interval (gap > 20 s): {sum(g > 20 for g in gaps)} of {len(gaps)}; scans done {len(done)} "
      f"(median {sorted(done)[len(done)//2] if done else 0} ms, max {max(done) if done else 0} ms), "
      f"skipped {skipped}; agent CPU {(int(cpu1)-int(cpu0))/hz/float(dur)*100:.1f} % of a core")
PY
  kill -TERM $agent $hub; wait $agent $hub 2>/dev/null || true
}
run 67108864 "default cap (64 MiB)"
run 107374182400 "cap 100 GiB (reads the 40 GiB sparse file)"
rm -rf "$dir"
