#!/usr/bin/env bash
# Makes the upgrade fixtures CI opens with today's hub (CONTRACT 31: a database written by an
# earlier release migrates forward): an older `trusthub` binary serves a new SQLite data dir
# and a new PostgreSQL database, an owner signs in and makes a token and a webhook, and the
# results are kept in crates/cli/tests/fixtures/upgrade/<schema>/ (the SQLite data dir, a
# pg_dump of the PostgreSQL database, and what the test expects).
#
#   git worktree add /tmp/old <commit> && (cd /tmp/old && CARGO_TARGET_DIR=/tmp/old-target \
#     cargo build -p trusthub --bin trusthub)
#   bash scripts/make-upgrade-fixture.sh /tmp/old-target/debug/trusthub <commit>
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${1:?the older trusthub binary}
COMMIT=${2:?the commit it was built from}
PG=${PG:-postgres://postgres@127.0.0.1:5432}
PORT=18555
H=http://127.0.0.1:$PORT/api/v1
PASSWORD='upgrade fixture password'
KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# What the older hub holds: an owner, a token, a webhook.
populate() {
  for _ in $(seq 1 300); do curl -sf $H/health >/dev/null && break; sleep 0.2; done
  curl -sf -c "$work/jar" -H 'content-type: application/json' \
    -d "{\"email\":\"admin@trusthub.local\",\"password\":\"$PASSWORD\"}" $H/auth/login >/dev/null
  curl -sf -b "$work/jar" -H 'content-type: application/json' \
    -d '{"name":"upgrade-fixture","scope":"read"}' $H/api-tokens | jq -r .token >"$work/token"
  curl -sf -b "$work/jar" -H 'content-type: application/json' \
    -d '{"url":"https://hooks.example.com/upgrade-fixture"}' $H/webhooks >/dev/null
}

# SQLite.
TRUSTHUB_ADMIN_PASSWORD=$PASSWORD TRUSTHUB_CA_KEY_BITS=2048 CLOUD_ENCRYPTION_KEY=$KEY \
  "$OLD" serve --listen 127.0.0.1:$PORT --data-dir "$work/sqlite" >"$work/sqlite.log" 2>&1 &
hub=$!
populate
sqlite_token=$(cat "$work/token")
kill -TERM $hub; wait $hub || true
SCHEMA=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT MAX(version) FROM _sqlx_migrations').fetchone()[0])" "$work/sqlite/trusthub.db")
out=crates/cli/tests/fixtures/upgrade/$SCHEMA
rm -rf "$out" && mkdir -p "$out"
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.execute('VACUUM'); c.close()" "$work/sqlite/trusthub.db"
cp "$work/sqlite/trusthub.db" "$out/sqlite.db"

# PostgreSQL.
db="th_upgrade_fixture_$$"
psql "$PG/postgres" -qc "CREATE DATABASE $db"
TRUSTHUB_ADMIN_PASSWORD=$PASSWORD TRUSTHUB_CA_KEY_BITS=2048 CLOUD_ENCRYPTION_KEY=$KEY \
  "$OLD" serve --listen 127.0.0.1:$PORT --data-dir "$work/pg" --database-url "$PG/$db" >"$work/pg.log" 2>&1 &
hub=$!
populate
pg_token=$(cat "$work/token")
kill -TERM $hub; wait $hub || true
pg_dump --no-owner --no-privileges "$PG/$db" >"$out/postgres.sql"
psql "$PG/postgres" -qc "DROP DATABASE $db"

cat >"$out/fixture.json" <<EOF
{"commit": "$COMMIT", "schema": $SCHEMA, "password": "$PASSWORD", "key": "$KEY",
 "sqlite_token": "$sqlite_token", "postgres_token": "$pg_token",
 "webhook": "https://hooks.example.com/upgrade-fixture"}
EOF
echo "wrote $out (schema $SCHEMA, from $COMMIT)"
