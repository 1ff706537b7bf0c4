#!/bin/sh
# Debian packages the image build and its boot test need on the build machine (installed when
# missing; root only): debootstrap + qemu-user for the arm64 rootfs, mtools/dosfstools/fdisk/
# e2fsprogs to assemble the image without mounts, zstd, qemu-system-arm to boot it, the arm64
# cross compiler for onoff's epoll, ssh and curl for the boot test; u-boot-tools (mkimage, mkenvimage)
# for the boot script and boot state, rauc + squashfs-tools + openssl for update bundles and their
# signing key, u-boot-qemu to boot the image under qemu as the Pi's firmware boots U-Boot.
set -eu
PKGS="debootstrap binfmt-support mtools dosfstools fdisk e2fsprogs zstd g++-aarch64-linux-gnu openssh-client curl
  u-boot-tools u-boot-qemu rauc squashfs-tools openssl"
QEMU="qemu-system-arm qemu-user-static"
missing=
for p in $PKGS $QEMU; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done

# Bookworm's qemu 7.2 is slow and has hung: the image boots 1.7x slower under its qemu-system than
# under 10.0 (175 s vs 103-111 s to the selftest, same image) and its TCG has looped in the kernel's
# ECDSA module-signature code; the rootfs builds 1.5x slower under its qemu-user (base 827-910 s vs
# 511-573 s). On bookworm, qemu that is missing or older than 8 comes from bookworm-backports
# (10.0), through a temporary source list so the host's /etc/apt stays as it was. Elsewhere (trixie
# has 10.0) the distribution's is new enough.
major() { "$1" --version 2>/dev/null | sed -n 's/^qemu[- a-z0-9]* version \([0-9]*\).*/\1/ip' | head -n1; }
backports=
if [ "$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null)" = bookworm ]; then
  [ "$(major qemu-system-aarch64)" -ge 8 ] 2>/dev/null || backports="$backports qemu-system-arm"
  [ "$(major qemu-aarch64-static)" -ge 8 ] 2>/dev/null || backports="$backports qemu-user-static"
fi
[ -n "$missing$backports" ] || exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  [ -z "$missing" ] || { echo "host-deps: missing Debian packages:$missing (install them as root)" >&2; exit 1; }
  exit 0 # an old qemu works, only slower
fi

# apt_install SOURCE-LIST PACKAGE...: update + install, from the given source list ("" for the host's).
apt_install() {
  opts=
  [ -z "$1" ] || opts="-o Dir::Etc::sourcelist=$1 -t bookworm-backports"
  shift
  # shellcheck disable=SC2086 # option and package lists
  apt-get $opts update -qq >/dev/null 2>&1 || true
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get $opts install -y -qq --no-install-recommends "$@" >/dev/null 2>&1
}

rest=
for p in $missing; do case " $backports " in *" $p "*) ;; *) rest="$rest $p" ;; esac; done
if [ -n "$rest" ]; then
  echo "host-deps: installing$rest"
  # shellcheck disable=SC2086
  apt_install "" $rest || { echo "host-deps: apt-get install$rest failed" >&2; exit 1; }
fi
if [ -n "$backports" ]; then
  list=$(mktemp)
  mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\/\{0,1\}\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
  echo "deb ${mirror:-http://deb.debian.org/debian} bookworm-backports main" >"$list"
  echo "host-deps: installing$backports from bookworm-backports (bookworm's qemu 7.2 is slow and has hung)"
  # shellcheck disable=SC2086
  if apt_install "$list" $backports; then
    # A binfmt entry with the F flag holds the old emulator open: drop it, build-image.sh registers anew.
    [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || echo -1 >/proc/sys/fs/binfmt_misc/qemu-aarch64
  else
    # Without backports: bookworm's own, slower; a qemu that is missing still fails the build's checks.
    echo "host-deps: bookworm-backports unavailable; installing bookworm's qemu (slower)" >&2
    # shellcheck disable=SC2086
    apt_install "" $backports || { echo "host-deps: apt-get install$backports failed" >&2; exit 1; }
  fi
  rm -f "$list"
fi
