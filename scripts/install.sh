#!/bin/sh
# Installs shadowgate onto an existing Raspberry Pi OS / Debian with systemd, from a release tree
# built by `make dist` (build/shadowgate/). Idempotent: rerunning it updates the app and the unit and
# restarts the service; the config in /etc/shadowgate and the data in /var/lib/shadowgate are kept.
#
#   sudo scripts/install.sh                  install (or update), enable and start
#   sudo scripts/install.sh --uninstall      remove app, unit, udev rule; keep config, data and user
#   sudo scripts/install.sh --uninstall --purge   also remove /etc/shadowgate and /var/lib/shadowgate
#
# Options: --from DIR (release tree; default: the tree this script is in, else build/shadowgate),
# --prefix DIR (default /opt/shadowgate), --root DIR (or DESTDIR=DIR: install into a directory tree,
# e.g. an image rootfs, never touching the running system and never calling systemctl),
# --no-start (enable but do not start). NODE=/path/to/node picks the Node.js binary (>= 20.19);
# --no-node-check skips running it (an arm64 image rootfs built on x86: NODE=/usr/bin/node).
set -eu

PREFIX=/opt/shadowgate
ROOT=${DESTDIR:-}
FROM=
ACTION=install
START=yes
PURGE=no
NODE=${NODE:-}
NODE_MIN=20.19
NODE_CHECK=yes

usage() { sed -n '2,15s/^# \{0,1\}//p' "$0"; }
die() { echo "install.sh: $*" >&2; exit 1; }
say() { echo "install.sh: $*"; }

while [ $# -gt 0 ]; do
  case $1 in
    --root) [ $# -ge 2 ] || die "--root needs a directory"; ROOT=$2; shift ;;
    --root=*) ROOT=${1#*=} ;;
    --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; PREFIX=$2; shift ;;
    --prefix=*) PREFIX=${1#*=} ;;
    --from) [ $# -ge 2 ] || die "--from needs a directory"; FROM=$2; shift ;;
    --from=*) FROM=${1#*=} ;;
    --no-start) START=no ;;
    --uninstall) ACTION=uninstall ;;
    --purge) PURGE=yes ;;
    --no-node-check) NODE_CHECK=no ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift
done

case $PREFIX in /*) ;; *) die "--prefix must be absolute: $PREFIX" ;; esac
if [ -n "$ROOT" ]; then
  [ -d "$ROOT" ] || die "--root $ROOT is not a directory"
  ROOT=$(cd "$ROOT" && pwd)
  [ "$ROOT" != / ] || ROOT=
fi
# Live means the running system: only then are systemctl and udevadm called.
LIVE=yes
[ -z "$ROOT" ] || LIVE=no
if [ "$LIVE" = yes ] && [ "$(id -u)" != 0 ]; then die "run as root (sudo), or use --root DIR"; fi

APP=$ROOT$PREFIX
UNIT=$ROOT/etc/systemd/system/shadowgate.service
WANTS=$ROOT/etc/systemd/system/multi-user.target.wants/shadowgate.service
SYSUSERS=$ROOT/usr/lib/sysusers.d/shadowgate.conf
# The command line on the PATH (/usr/local/bin is on every Debian PATH, root's and users').
BIN=$ROOT/usr/local/bin/shadowgate
UDEV=$ROOT/etc/udev/rules.d/70-shadowgate-gpio.rules
CONF_DIR=$ROOT/etc/shadowgate
STATE_DIR=$ROOT/var/lib/shadowgate

has() { command -v "$1" >/dev/null 2>&1; }

uninstall() {
  if [ "$LIVE" = yes ] && has systemctl; then
    systemctl disable --now shadowgate.service 2>/dev/null || true
  fi
  rm -f "$WANTS" "$UNIT" "$UDEV" "$SYSUSERS" "$BIN"
  rm -rf "$APP" "$APP.new" "$APP.old"
  if [ "$LIVE" = yes ] && has systemctl; then systemctl daemon-reload || true; fi
  if [ "$PURGE" = yes ]; then
    rm -rf "$CONF_DIR" "$STATE_DIR"
    say "removed shadowgate, its config and its data"
  else
    say "removed shadowgate; kept $CONF_DIR and $STATE_DIR (--purge removes them)"
  fi
  # The shadowgate user stays: deleting it could hand its UID, and its files, to a later user.
}

if [ "$ACTION" = uninstall ]; then uninstall; exit 0; fi

# --- what to install
if [ -z "$FROM" ]; then
  here=$(cd "$(dirname "$0")/.." && pwd)
  if [ -f "$here/shadowgate.mjs" ]; then FROM=$here; else FROM=$here/build/shadowgate; fi
fi
[ -f "$FROM/shadowgate.mjs" ] || die "no release tree at $FROM (run 'make dist' first, or pass --from DIR)"
for f in shadowgate.service shadowgate.sysusers 70-shadowgate-gpio.rules; do
  [ -f "$FROM/systemd/$f" ] || die "$FROM/systemd/$f is missing"
done

# --- Node.js >= 20.19 (package.json engines; serialport 13 and aedes 1 need 20)
if [ "$NODE_CHECK" = no ]; then
  NODE=${NODE:-/usr/bin/node}
  case $NODE in /*) ;; *) die "NODE must be an absolute path with --no-node-check" ;; esac
else
  [ -n "$NODE" ] || NODE=$(command -v node || true)
  [ -n "$NODE" ] || die "Node.js >= $NODE_MIN is required and 'node' is not on PATH (Debian trixie: apt install nodejs)"
  case $NODE in /*) ;; *) NODE=$(command -v "$NODE") || die "cannot find $NODE" ;; esac
  version=$("$NODE" -p 'process.versions.node' 2>/dev/null) || die "$NODE does not run"
  if ! printf '%s\n%s\n' "$NODE_MIN" "$version" | sort -V -C; then
    die "Node.js $version at $NODE is too old: shadowgate needs >= $NODE_MIN"
  fi
  # The release tree carries onoff's epoll addon built for these majors' ABIs only (scripts/dist.sh).
  case ${version%%.*} in
    20|22|24) ;;
    *) say "warning: Node.js $version is not a release shadowgate is built and tested for (20, 22, 24): GPIO (onoff's epoll addon) will not load" ;;
  esac
fi

# --- the app: staged next to the old one, then swapped in
mkdir -p "$(dirname "$APP")"
rm -rf "$APP.new" "$APP.old"
mkdir "$APP.new"
(cd "$FROM" && tar cf - --exclude=./build --exclude=./.git .) | (cd "$APP.new" && tar xf - --no-same-owner)
[ ! -e "$APP" ] || mv "$APP" "$APP.old"
mv "$APP.new" "$APP"
rm -rf "$APP.old"
chmod -R u=rwX,go=rX "$APP"

# --- user, groups, udev rule, unit
install -D -m 0644 "$FROM/systemd/shadowgate.sysusers" "$SYSUSERS"
if has systemd-sysusers; then
  if [ "$LIVE" = yes ]; then systemd-sysusers "$SYSUSERS"; else systemd-sysusers --root="$ROOT" "$SYSUSERS"; fi
else
  die "systemd-sysusers is missing (package systemd); cannot create the shadowgate user"
fi
install -D -m 0644 "$FROM/systemd/70-shadowgate-gpio.rules" "$UDEV"

mkdir -p "$(dirname "$UNIT")"
sed -e "s#/usr/bin/node #$NODE #" -e "s#/opt/shadowgate/#$PREFIX/#g" \
  "$FROM/systemd/shadowgate.service" > "$UNIT.tmp"
chmod 0644 "$UNIT.tmp"
mv "$UNIT.tmp" "$UNIT"
# What `systemctl enable` does, done by hand so a --root install needs no systemctl.
mkdir -p "$(dirname "$WANTS")"
ln -sfn /etc/systemd/system/shadowgate.service "$WANTS"

# --- `shadowgate` on the PATH: a wrapper that runs the app with the service's own Node.js (the PATH may
# hold another one, or none), so `shadowgate scan`, `probe`, `check-config` work as the docs show them.
mkdir -p "$(dirname "$BIN")"
cat > "$BIN.tmp" <<EOF
#!/bin/sh
# Installed by shadowgate's scripts/install.sh: the gateway's command line with the service's Node.js.
exec '$NODE' '$PREFIX/shadowgate.mjs' "\$@"
EOF
chmod 0755 "$BIN.tmp"
mv "$BIN.tmp" "$BIN"

# --- config skeleton, never overwritten
gid=$(awk -F: '$1 == "shadowgate" { print $3 }' "$ROOT/etc/group" 2>/dev/null || true)
mkdir -p "$CONF_DIR"
chmod 0750 "$CONF_DIR"
if [ ! -e "$CONF_DIR/config.json" ]; then
  id=$(cat "$ROOT/etc/hostname" 2>/dev/null || true)
  cat > "$CONF_DIR/config.json.tmp" <<EOF
{
  "\$schema": "$PREFIX/dist/config/schema.json",
  "gateway": { "id": "${id:-shadowgate}", "log_level": "info" },
  "buses": [],
  "devices": []
}
EOF
  chmod 0640 "$CONF_DIR/config.json.tmp"
  mv "$CONF_DIR/config.json.tmp" "$CONF_DIR/config.json"
  say "wrote a config skeleton to $CONF_DIR/config.json (docs: $PREFIX/docs/)"
else
  say "kept the existing $CONF_DIR/config.json"
fi
if [ -n "$gid" ] && [ "$(id -u)" = 0 ]; then chown -R "0:$gid" "$CONF_DIR"; fi

if [ "$LIVE" = no ]; then
  say "installed into $ROOT (enabled; not started: --root)"
  exit 0
fi

# --- the running system
if has udevadm; then
  udevadm control --reload || true
  udevadm trigger --subsystem-match=gpio --action=add || true
fi
"$NODE" "$APP/shadowgate.mjs" check-config "$CONF_DIR/config.json" || say "warning: $CONF_DIR/config.json is invalid; fix it, then: systemctl restart shadowgate"
systemctl daemon-reload
if [ "$START" = yes ]; then
  systemctl restart shadowgate.service
  say "installed and started; logs: journalctl -u shadowgate -f"
else
  say "installed and enabled; start with: systemctl start shadowgate"
fi
