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

# qemu-system 7.2 (bookworm) boots the image 1.7x slower than 10.0 (175 s vs 103-110 s to the
# selftest, same image) and its TCG has hung boots in the kernel's ECDSA module-signature code. On
# bookworm, take qemu-system-arm from bookworm-backports, through a temporary source list so the
# host's /etc/apt stays as it was. Elsewhere (trixie has 10.0) the distribution's is new enough.
qemu_major=$(qemu-system-aarch64 --version | sed -n 's/^QEMU emulator version \([0-9]*\).*/\1/p')
codename=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null)
if [ "${qemu_major:-0}" -lt 8 ] && [ "$codename" = bookworm ] && [ "$(id -u)" = 0 ]; then
  list=$(mktemp)
  mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\/\{0,1\}\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
  echo "deb ${mirror:-http://deb.debian.org/debian} bookworm-backports main" >"$list"
  echo "host-deps: qemu-system $qemu_major is older than 8; installing qemu-system-arm from bookworm-backports"
  apt-get -o Dir::Etc::sourcelist="$list" update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get -o Dir::Etc::sourcelist="$list" install -y -qq --no-install-recommends \
    -t bookworm-backports qemu-system-arm >/dev/null 2>&1 ||
    echo "host-deps: bookworm-backports unavailable; staying on qemu $qemu_major (slower boots)" >&2
  rm -f "$list"
fi
