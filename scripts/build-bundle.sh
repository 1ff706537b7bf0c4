#!/bin/bash
# `make bundle`: a signed RAUC update bundle of the root file system that the last `make image` built
# (build/image/rootfs), for the root slots of the SD image (docs/deploy.md "Updating"). Output:
#   build/shadowgate-<version>-arm64.raucb
# The bundle holds one ext4 image of the root (sized to its content, written raw into the slot that is
# not running), in RAUC's verity format: squashfs (zstd level 6) with a dm-verity hash tree, signed (CMS) with the
# key from scripts/image/signing.sh. No hooks.
# Options (the image test uses them to make bundles of other versions from a copy of the tree):
#   --root DIR          the root tree (default build/image/rootfs)
#   --version V         the bundle's version (default: the gateway's, from DIR/opt/shadowgate/package.json)
#   --compatible C      the board it is for (default: compatible= of DIR/etc/rauc/system.conf)
#   --out FILE          where to write it
#   --key K --cert C    sign with this pair instead of scripts/image/signing.sh's
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "build-bundle: $*" >&2; exit 1; }
log() { printf '[build-bundle %(%T)T] %s\n' -1 "$*"; }
ROOT=build/image/rootfs VERSION='' COMPATIBLE='' OUT='' KEY='' CERT=''
while [ $# -gt 0 ]; do
  case $1 in
    --root) ROOT=$2 ;; --version) VERSION=$2 ;; --compatible) COMPATIBLE=$2 ;; --out) OUT=$2 ;;
    --key) KEY=$2 ;; --cert) CERT=$2 ;;
    *) die "unknown option $1" ;;
  esac
  shift 2
done
[ "$(id -u)" = 0 ] || die "run as root (the root tree has files only root can read)"
for need in rauc mksquashfs mkfs.ext4; do command -v "$need" >/dev/null || die "$need missing: run scripts/image/host-deps.sh"; done
[ -f "$ROOT/etc/rauc/system.conf" ] || die "$ROOT is not an image root tree: run 'make image' first"
if [ -z "$KEY" ]; then
  # shellcheck source=scripts/image/signing.sh
  . scripts/image/signing.sh
  KEY=$SIGN_KEY CERT=$SIGN_CERT
fi
VERSION=${VERSION:-$(node -p "require('$(realpath "$ROOT")/opt/shadowgate/package.json').version")}
COMPATIBLE=${COMPATIBLE:-$(sed -n 's/^compatible=//p' "$ROOT/etc/rauc/system.conf")}
OUT=${OUT:-build/shadowgate-$VERSION-arm64.raucb}

t0=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/shadowgate-bundle.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/content"
# The slot is written whole, so the ext4 is sized to the tree (+10 % and 64 MB for the file system's own
# needs), not to the partition: that is the flash written per update.
mb=$(( $(du -sm "$ROOT" | cut -f1) * 11 / 10 + 64 ))
mkfs.ext4 -q -F -L RASPIROOT -E root_owner=0:0 -d "$ROOT" "$work/content/rootfs.ext4" "${mb}M" >/dev/null
cat >"$work/content/manifest.raucm" <<MF
[update]
compatible=$COMPATIBLE
version=$VERSION
description=shadowgate $VERSION root file system
build=$(date -u +%Y%m%dT%H%M%SZ)

[bundle]
format=verity

[image.rootfs]
filename=rootfs.ext4
MF
rm -f "$OUT"
rauc bundle --cert="$CERT" --key="$KEY" --mksquashfs-args="-comp zstd -Xcompression-level 6 -b 1M" \
  "$work/content" "$OUT" >"$work/rauc.log" 2>&1 || { cat "$work/rauc.log" >&2; die "rauc bundle failed"; }
log "$OUT: version $VERSION for $COMPATIBLE, root image ${mb} MB, bundle $(du -m "$OUT" | cut -f1) MB, built in $((SECONDS - t0)) s"
