#!/bin/sh
# Debian packages the image build and its boot test need on the build machine (installed when
# missing; root only): debootstrap + qemu-user for the arm64 rootfs, mtools/dosfstools/fdisk/
# e2fsprogs to assemble the image without mounts, zstd, qemu-system-arm to boot it, the arm64
# cross compiler for onoff's epoll, ssh and curl for the boot test.
set -eu
PKGS="debootstrap qemu-user-static binfmt-support mtools dosfstools fdisk e2fsprogs zstd qemu-system-arm g++-aarch64-linux-gnu openssh-client curl"
missing=
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "host-deps: missing Debian packages:$missing (install them as root)" >&2; exit 1
  fi
  echo "host-deps: installing$missing"
  apt-get update -qq >/dev/null 2>&1 || true
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# Bookworm's qemu 7.2 is slow and has hung: the image boots 1.7x slower under its qemu-system than
# under 10.0 (175 s vs 103-111 s to the selftest, same image) and its TCG has looped in the kernel's
# ECDSA module-signature code; the rootfs builds 1.5x slower under its qemu-user (base 827-910 s vs
# 573 s). On bookworm, take both from bookworm-backports, through a temporary source list so the
# host's /etc/apt stays as it was. Elsewhere (trixie has 10.0) the distribution's are new enough.
major() { "$1" --version 2>/dev/null | sed -n 's/^qemu[- a-z0-9]* version \([0-9]*\).*/\1/ip' | head -n1; }
old=
[ "$(major qemu-system-aarch64)" -ge 8 ] 2>/dev/null || old="$old qemu-system-arm"
[ "$(major qemu-aarch64-static)" -ge 8 ] 2>/dev/null || old="$old qemu-user-static"
codename=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null)
if [ -n "$old" ] && [ "$codename" = bookworm ] && [ "$(id -u)" = 0 ]; then
  list=$(mktemp)
  mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\/\{0,1\}\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
  echo "deb ${mirror:-http://deb.debian.org/debian} bookworm-backports main" >"$list"
  echo "host-deps: qemu 7.2 is slow and has hung here; installing$old from bookworm-backports"
  apt-get -o Dir::Etc::sourcelist="$list" update -qq >/dev/null 2>&1 || true
  # shellcheck disable=SC2086
  if DEBIAN_FRONTEND=noninteractive apt-get -o Dir::Etc::sourcelist="$list" install -y -qq \
    --no-install-recommends -t bookworm-backports $old >/dev/null 2>&1; then
    # A binfmt entry with the F flag holds the old emulator open: drop it, build-image.sh registers anew.
    [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || echo -1 >/proc/sys/fs/binfmt_misc/qemu-aarch64
  else
    echo "host-deps: bookworm-backports unavailable; staying on qemu 7.2 (slower)" >&2
  fi
  rm -f "$list"
fi
