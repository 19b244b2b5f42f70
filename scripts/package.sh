#!/usr/bin/env bash
# Debian packages of the hub and the agent (CONTRACT 31), built with dpkg-deb alone:
#   target/debian/trusthub_<version>_<arch>.deb        the hub and the CLI, trusthub.service
#   target/debian/trusthub-agent_<version>_<arch>.deb  the agent, trusthub-agent.service
#
# A release package:   bash scripts/package.sh
#   (cargo build --release of both binaries first, then packaged with xz compression)
# From binaries already built (what CI does with the test run's debug binaries):
#   BIN_DIR=target/debug NO_BUILD=1 COMPRESS=none bash scripts/package.sh
# VERSION overrides the version (default: the workspace's, from Cargo.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN_DIR=${BIN_DIR:-target/release}
COMPRESS=${COMPRESS:-xz}
VERSION=${VERSION:-$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)}
ARCH=$(dpkg --print-architecture)
OUT=${OUT:-target/debian}
if [ -z "${NO_BUILD:-}" ]; then
  cargo build --release -p trusthub -p trusthub-agent --bin trusthub --bin trusthub-agent
fi
for b in trusthub trusthub-agent; do
  [ -x "$BIN_DIR/$b" ] || { echo "package.sh: $BIN_DIR/$b is not built" >&2; exit 1; }
done
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ---------------------------------------------------------------- the hub (and the CLI)
hub=$work/trusthub
install -d -m 755 "$hub/DEBIAN" "$hub/usr/bin" "$hub/lib/systemd/system" "$hub/etc/trusthub" \
  "$hub/usr/share/doc/trusthub"
install -m 755 "$BIN_DIR/trusthub" "$hub/usr/bin/trusthub"
install -m 644 packaging/trusthub.service "$hub/lib/systemd/system/trusthub.service"
# The settings file: every setting commented out with its help and default (from the binary
# itself, so it never disagrees with it), and the data dir the unit writes to.
{
  env -i "$BIN_DIR/trusthub" config show --template
  printf '\n# Where the package keeps the database, keys and packs.\ndata_dir = "/var/lib/trusthub"\n'
} >"$hub/etc/trusthub/trusthub.toml"
chmod 640 "$hub/etc/trusthub/trusthub.toml"
env -i "$BIN_DIR/trusthub" config check "$hub/etc/trusthub/trusthub.toml" >/dev/null
install -m 644 README.md "$hub/usr/share/doc/trusthub/README.md"
cat >"$hub/DEBIAN/control" <<EOF
Package: trusthub
Version: $VERSION
Architecture: $ARCH
Maintainer: Trusthub <trusthub@trusthub.local>
Section: admin
Priority: optional
Depends: adduser, libc6
Installed-Size: $(du -sk "$hub/usr" | cut -f1)
Homepage: https://github.com/trusthub/trusthub
Description: self-hosted host monitoring and trust hub
 One binary: the hub (REST API, dashboard, jobs) on SQLite or PostgreSQL, and the
 operator CLI. Settings in /etc/trusthub/trusthub.toml, data in /var/lib/trusthub,
 run by trusthub.service as the system user trusthub.
EOF
echo /etc/trusthub/trusthub.toml >"$hub/DEBIAN/conffiles"
cat >"$hub/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
  if ! getent passwd trusthub >/dev/null; then
    adduser --system --group --home /var/lib/trusthub --no-create-home \
      --gecos "Trusthub hub" trusthub >/dev/null
  fi
  install -d -m 750 -o trusthub -g trusthub /var/lib/trusthub
  chown root:trusthub /etc/trusthub/trusthub.toml
  chmod 640 /etc/trusthub/trusthub.toml
  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null || true
    systemctl enable trusthub.service >/dev/null || true
    # An upgrade restarts a running hub (it migrates its database forward at start).
    systemctl try-restart trusthub.service >/dev/null || true
  fi
fi
exit 0
EOF
cat >"$hub/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  systemctl stop trusthub.service >/dev/null || true
  systemctl disable trusthub.service >/dev/null || true
fi
exit 0
EOF
cat >"$hub/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null || true
fi
if [ "$1" = purge ]; then
  # Purge removes the data and the settings; remove keeps them.
  rm -rf /var/lib/trusthub /etc/trusthub
  if getent passwd trusthub >/dev/null; then
    deluser --system trusthub >/dev/null 2>&1 || true
  fi
  if getent group trusthub >/dev/null; then
    delgroup --system trusthub >/dev/null 2>&1 || true
  fi
fi
exit 0
EOF
chmod 755 "$hub/DEBIAN/postinst" "$hub/DEBIAN/prerm" "$hub/DEBIAN/postrm"

# ---------------------------------------------------------------- the agent
agent=$work/trusthub-agent
install -d -m 755 "$agent/DEBIAN" "$agent/usr/bin" "$agent/lib/systemd/system" \
  "$agent/etc/trusthub-agent"
install -m 755 "$BIN_DIR/trusthub-agent" "$agent/usr/bin/trusthub-agent"
install -m 644 packaging/trusthub-agent.service "$agent/lib/systemd/system/trusthub-agent.service"
install -m 600 packaging/agent.env "$agent/etc/trusthub-agent/agent.env"
cat >"$agent/DEBIAN/control" <<EOF
Package: trusthub-agent
Version: $VERSION
Architecture: $ARCH
Maintainer: Trusthub <trusthub@trusthub.local>
Section: admin
Priority: optional
Depends: libc6
Installed-Size: $(du -sk "$agent/usr" | cut -f1)
Homepage: https://github.com/trusthub/trusthub
Description: Trusthub host agent
 Reports this host's metrics, inventory and checks to a Trusthub hub and carries out
 the signed actions it allows. Enrol it in /etc/trusthub-agent/agent.env.
EOF
echo /etc/trusthub-agent/agent.env >"$agent/DEBIAN/conffiles"
cat >"$agent/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
  install -d -m 700 /var/lib/trusthub-agent
  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null || true
    systemctl enable trusthub-agent.service >/dev/null || true
    systemctl try-restart trusthub-agent.service >/dev/null || true
  fi
fi
exit 0
EOF
cat >"$agent/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  systemctl stop trusthub-agent.service >/dev/null || true
  systemctl disable trusthub-agent.service >/dev/null || true
fi
exit 0
EOF
cat >"$agent/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null || true
fi
if [ "$1" = purge ]; then
  rm -rf /var/lib/trusthub-agent /etc/trusthub-agent
fi
exit 0
EOF
chmod 755 "$agent/DEBIAN/postinst" "$agent/DEBIAN/prerm" "$agent/DEBIAN/postrm"

out=$(cd "$OUT" && pwd)
for p in trusthub trusthub-agent; do
  deb="$out/${p}_${VERSION}_${ARCH}.deb"
  dpkg-deb --root-owner-group -Z"$COMPRESS" --build "$work/$p" "$deb" >/dev/null
  echo "$deb"
done
