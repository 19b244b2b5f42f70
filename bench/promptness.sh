#!/usr/bin/env bash
# Promptness (issue 61, CONTRACT 33), as a new user meets it: `trusthub up` with its defaults
# (the agent pushing every 60 s), then the wall-clock time from an action to what the API
# shows — an advisory import to the host's finding, a write to a watched file to its drift,
# a requested compliance run to its results, and a dead URL (checked every 10 s, down on the
# third failure) to its alert, run by the hub and by the host's agent.
# Run by hand: bash bench/promptness.sh   (PROFILE=release for a release build; ROUNDS=3)
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE=${PROFILE:-dev}
ROUNDS=${ROUNDS:-3}
if [ "$PROFILE" = release ]; then
  [ -n "${NO_BUILD:-}" ] || cargo build --release -p trusthub --bin trusthub >/dev/null
  BIN=$PWD/target/release/trusthub
else
  [ -n "${NO_BUILD:-}" ] || cargo build -p trusthub --bin trusthub >/dev/null
  BIN=$PWD/target/debug/trusthub
fi
PORT=18191
H=http://127.0.0.1:$PORT/api/v1
dir=$(mktemp -d)
trap 'kill "$up" 2>/dev/null; wait "$up" 2>/dev/null; rm -rf "$dir"' EXIT
cd "$dir"
mkdir -p shop osv/npm
cat > shop/package-lock.json <<'JSON'
{"name": "shop", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
 "packages": {"": {"name": "shop", "version": "1.0.0", "dependencies": {"lodash": "4.17.20"}},
  "node_modules/lodash": {"version": "4.17.20"}}}
JSON
advisory() { # id, modified: one lodash advisory
  cat > "osv/npm/$1.json" <<JSON
{"schema_version":"1.6.0","id":"$1","modified":"$2","published":"2021-05-06T16:05:51Z",
 "summary":"a lodash advisory","affected":[{"package":{"ecosystem":"npm","name":"lodash"},
   "ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"4.17.21"}]}]}],
 "severity":[{"type":"CVSS_V3","score":"CVSS:3.1/AV:N/AC:L/PR:H/UI:N/S:U/C:H/I:H/A:H"}]}
JSON
}
echo "key = 1" > watched.conf

TRUSTHUB_CA_KEY_BITS=2048 RUST_LOG=warn "$BIN" up --listen 127.0.0.1:$PORT --data-dir data \
  --project-path shop >up.log 2>&1 &
up=$!
for _ in $(seq 1 600); do curl -sf $H/health >/dev/null && [ -s data/initial-admin.txt ] && break; sleep 0.2; done
PW=$(sed -n 's/^password: //p' data/initial-admin.txt)
curl -sf -c jar -H 'content-type: application/json' \
  -d "{\"email\":\"admin@trusthub.local\",\"password\":\"$PW\"}" $H/auth/login >/dev/null
AGENT=
for _ in $(seq 1 600); do
  AGENT=$(curl -sf -b jar $H/agents | jq -r '.[0].id // empty') && [ -n "$AGENT" ] && break; sleep 0.2
done
now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(now)"; }
wait_for() { # seconds, command: until it succeeds
  local limit=$1; shift
  local end=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || { echo "timeout"; return 1; }
    sleep 0.2
  done
}

# The watched file's baseline, and the shop's dependencies reported (the first inventory).
curl -sf -b jar -X PATCH -H 'content-type: application/json' \
  -d "{\"config_paths\":[\"$dir/watched.conf\"]}" $H/agents/$AGENT/governance >/dev/null
wait_for 180 sh -c "curl -sf -b jar $H/agents/$AGENT/config-hashes | jq -e '.[] | select(.path == \"$dir/watched.conf\")'"
wait_for 180 sh -c "curl -sf -b jar '$H/agents/$AGENT/inventory' | grep -q lodash"

for round in $(seq 1 "$ROUNDS"); do
  # An advisory import to the host's finding.
  advisory "GHSA-test-$round" "2024-01-0${round}T00:00:00Z"
  (cd osv/npm && rm -f ../../npm.zip && zip -q ../../npm.zip "GHSA-test-$round.json")
  t=$(now)
  curl -sf -b jar -H 'content-type: application/zip' --data-binary @npm.zip $H/cve/sources/import >/dev/null
  wait_for 120 sh -c "curl -sf -b jar '$H/inventory/cves?package=lodash' | jq -e '.items[] | select(.vuln_id == \"GHSA-test-$round\")'"
  echo "round $round: import -> finding: $(since "$t") s"

  # A write to a watched file to its drift.
  t=$(now)
  echo "key = $round$RANDOM" >> watched.conf
  wait_for 120 sh -c "curl -sf -b jar '$H/drift?status=drifted' | grep -q watched.conf"
  echo "round $round: write -> drift: $(since "$t") s"
  curl -sf -b jar -X POST -H 'content-type: application/json' $H/agents/$AGENT/config-hashes/rebase \
    -d "{\"paths\": [\"$dir/watched.conf\"], \"reason\": \"bench round $round\"}" >/dev/null

  # A requested compliance run to its results.
  t=$(now)
  RUN=$(curl -sf -b jar -X POST -H 'content-type: application/json' -d '{}' $H/compliance/run | jq -r .run_id)
  wait_for 180 sh -c "curl -sf -b jar $H/compliance/runs | jq -e '.[] | select(.id == \"$RUN\" and .done == .hosts)'"
  echo "round $round: compliance run -> results: $(since "$t") s"
done

# A dead URL checked every 10 s (down on the third failure) to its alert: by the hub, and by
# the host's agent. 10.255.255.1 answers nothing: each check waits for its 10 s timeout.
for by in hub agent; do
  body="{\"name\":\"dead-$by\",\"type\":\"http\",\"endpoint\":\"http://10.255.255.1:81/$by\",\"interval_seconds\":10}"
  [ "$by" = agent ] && body="{\"agent_id\":\"$AGENT\",${body#\{}"
  t=$(now)
  APP=$(curl -sf -b jar -H 'content-type: application/json' -d "$body" $H/apps | jq -r .id)
  wait_for 300 sh -c "curl -sf -b jar '$H/alerts?is_resolved=false' | jq -e '.[] | select(.app_id == \"$APP\")'"
  echo "dead URL checked by the $by: created -> alert: $(since "$t") s"
done
