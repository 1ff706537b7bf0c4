#!/bin/sh
# Debian packages the image build and its boot test need on the build machine (installed when
# missing; root only): debootstrap + qemu-user for the arm64 rootfs, mtools/dosfstools/fdisk/
# e2fsprogs to assemble the image without mounts, zstd, qemu-system-arm to boot it, the arm64
# cross compiler for onoff's epoll, ssh and curl for the boot test.
set -eu
PKGS="debootstrap qemu-user-static binfmt-support mtools dosfstools fdisk e2fsprogs zstd qemu-system-arm g++-aarch64-linux-gnu openssh-client curl"
missing=
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
[ -n "$missing" ] || exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "host-deps: missing Debian packages:$missing (install them as root)" >&2; exit 1
fi
echo "host-deps: installing$missing"
apt-get update -qq >/dev/null 2>&1 || true
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
