#!/bin/bash
# `make image`: a bootable arm64 SD image for Raspberry Pi 3/4/Zero 2 W/CM4, built as root from
# Debian packages only (no Docker, no loop or vfat mounts; docs/deploy.md). Output:
#   build/shadowgate-<version>-arm64.img.zst and .sha256   the image to flash
#   build/image/shadowgate.img                             the same image uncompressed (image test)
# Steps: 1 base rootfs (debootstrap + kernel + firmware + nodejs under qemu-user; cached outside the checkout
# as $SHADOWGATE_CACHE/image/base-<suite>-<key>.tar.zst, SHADOWGATE_CACHE defaulting to ~/.cache/shadowgate, the
# key hashing everything that goes into it, so a fresh clone reuses it), 2 the gateway from
# `make dist` plus scripts/image/rootfs, 3 partitions assembled with mkfs -d / mcopy / sfdisk / dd:
# p1 FAT boot (U-Boot, boot.scr), p2 root slot A, p3 root slot B (empty until the first update),
# p4 data. `make bundle` (scripts/build-bundle.sh) turns the root tree left in build/image/rootfs
# into a signed update bundle; the image trusts the signing certificate (scripts/image/signing.sh).
# Env: SUITE (trixie), MIRROR and SECURITY_MIRROR (default: the host's apt sources), NO_CACHE=1,
# IMAGE_COMPRESS=0 (skip the .zst). Needs: scripts/image/host-deps.sh installed, `make dist` done.
# `build-image.sh check` only runs the host checks; `build-image.sh base` stops after step 1;
# `build-image.sh key` prints the base cache key.
set -euo pipefail

cd "$(dirname "$0")/.."
TOP=$PWD
SUITE=${SUITE:-trixie}
WORK=$TOP/build/image
BASE_CACHE=${SHADOWGATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shadowgate}/image
R=$WORK/rootfs
DIST=$TOP/build/shadowgate
VERSION=$(node -p 'require("./package.json").version')
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

log() { printf '[build-image %(%T)T] %s\n' -1 "$*"; }
die() { echo "build-image: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (debootstrap and chroot need it)"

host_mirror() {
  # The host's own Debian mirror (deb822 sources first, then the one-line format).
  local pat=$1 f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && awk -v p="$pat" '/^URIs:/ && $2 ~ p { print $2; exit }' "$f"
  done | head -n1
  grep -hs '^deb ' /etc/apt/sources.list | awk -v p="$pat" '$2 ~ p { print $2; exit }' || true
}
MIRROR=${MIRROR:-$(host_mirror 'debian/?$' | head -n1)}
SECURITY_MIRROR=${SECURITY_MIRROR:-$(host_mirror 'security' | head -n1)}
[ -n "$MIRROR" ] || die "no Debian mirror found in the host's apt sources; set MIRROR="
SECURITY_MIRROR=${SECURITY_MIRROR:-${MIRROR%/debian}/debian-security}

# ---------------------------------------------------------------- host checks
preflight() {
  local need
  for need in debootstrap chroot mkfs.ext4 mkfs.vfat mcopy sfdisk zstd update-binfmts mkimage mkenvimage openssl; do
    command -v "$need" >/dev/null || die "$need missing: run scripts/image/host-deps.sh"
  done
  # binfmt_misc starts unmounted on some hosts; arm64 binaries in the chroot need it.
  if [ ! -e /proc/sys/fs/binfmt_misc/status ]; then
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || die "cannot mount binfmt_misc"
  fi
  update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
  # qemu-user 9.1 and later register through systemd-binfmt's binfmt.d only, which needs no
  # running systemd: the file's line goes to the kernel as it is.
  if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] && [ -f /usr/lib/binfmt.d/qemu-aarch64.conf ]; then
    grep '^:' /usr/lib/binfmt.d/qemu-aarch64.conf >/proc/sys/fs/binfmt_misc/register || true
  fi
  [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || die "binfmt for qemu-aarch64 not registered"
  local free
  free=$(df -Pm "$TOP/build" 2>/dev/null | awk 'NR==2 { print $4 }')
  [ "${free:-0}" -ge 4000 ] || die "need 4 GB free under build/ (have ${free:-0} MB)"
}

MOUNTED=()
chroot_mounts() {
  local m
  for m in proc sys dev dev/pts; do
    mkdir -p "$R/$m"
    case $m in
      proc) mount -t proc proc "$R/proc" ;;
      sys) mount -t sysfs sys "$R/sys" ;;
      dev) mount --bind /dev "$R/dev" ;;
      dev/pts) mount -t devpts devpts "$R/dev/pts" ;;
    esac
    MOUNTED=("$R/$m" "${MOUNTED[@]}")
  done
}
cleanup() {
  local m
  for m in "${MOUNTED[@]}"; do umount -l "$m" 2>/dev/null || true; done
  MOUNTED=()
}
trap cleanup EXIT INT TERM

# Every chroot command runs with a clean environment (host variables such as NODE_EXTRA_CA_CERTS
# would leak in otherwise).
in_root() { chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
  DEBIAN_FRONTEND=noninteractive "$@"; }

# ---------------------------------------------------------------- 1. base rootfs
# busybox: overlayroot's initramfs script needs its grep. e2fsprogs (not in trixie's minbase):
# overlayroot's initramfs hook copies mke2fs, and fsck/growfs of the ext4 partitions need it.
# fdisk: sfdisk and partx grow the data partition on the card. No cloud-guest-utils (growpart): it
# pulls in python3 (~25 MB).
PACKAGES=(
  systemd-sysv udev kmod busybox initramfs-tools zstd overlayroot
  raspi-firmware firmware-brcm80211
  nodejs
  systemd-timesyncd systemd-resolved iproute2 openssh-server wpasupplicant fdisk e2fsprogs
  ca-certificates nano less
  rauc rauc-service libubootenv-tool u-boot-rpi
)
KERNEL=linux-image-arm64
# apt-get install in the rootfs, keeping config files already there (scripts/image/base).
apt_install() {
  in_root apt-get install -y -q --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@" >>"$WORK/apt.log" 2>&1 \
    || { tail -n 40 "$WORK/apt.log" >&2; die "apt-get install $* failed (log: $WORK/apt.log)"; }
}
# The cache key: everything step 1 depends on (suite, packages, its own code, scripts/image/base).
base_key() {
  { echo "$SUITE ${PACKAGES[*]} $KERNEL"; declare -f build_base apt_install; find scripts/image/base -type f | LC_ALL=C sort | xargs sha256sum; } \
    | sha256sum | cut -c1-16
}

build_base() {
  log "debootstrap $SUITE arm64 from $MIRROR"
  debootstrap --arch=arm64 --variant=minbase --components=main,non-free-firmware \
    --include=ca-certificates "$SUITE" "$R" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -n 30 "$WORK/debootstrap.log" >&2; die "debootstrap failed (log: $WORK/debootstrap.log)"; }
  cat >"$R/etc/apt/sources.list.d/debian.sources" <<SRC
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main non-free-firmware

Types: deb
URIs: $SECURITY_MIRROR
Suites: $SUITE-security
Components: main non-free-firmware
SRC
  rm -f "$R/etc/apt/sources.list"
  # No service starts inside the build chroot.
  printf '#!/bin/sh\nexit 101\n' >"$R/usr/sbin/policy-rc.d"; chmod 755 "$R/usr/sbin/policy-rc.d"
  # initramfs, overlayroot and raspi-firmware settings go in before the kernel, so its initramfs
  # is generated once with them (MODULES=list: `most` takes ~10 min per initramfs under qemu).
  cp -a "$TOP/scripts/image/base/." "$R/"
  chroot_mounts
  # No fsync per unpacked file while building (the rootfs is tarred and written out afterwards anyway).
  echo force-unsafe-io >"$R/etc/dpkg/dpkg.cfg.d/shadowgate-build"
  log "apt: ${PACKAGES[*]} $KERNEL"
  in_root apt-get update -qq >"$WORK/apt.log" 2>&1 || { tail -n 30 "$WORK/apt.log" >&2; die "apt-get update failed"; }
  # The kernel goes in last, on its own: its postinst builds the initramfs with every hook already
  # there. Installed together, packages configured after it (overlayroot, busybox, e2fsprogs)
  # trigger a second ~2-minute initramfs generation under qemu-user.
  apt_install "${PACKAGES[@]}"
  apt_install "$KERNEL"
  in_root apt-get clean
  rm -f "$R/etc/dpkg/dpkg.cfg.d/shadowgate-build"
  rm -rf "$R"/var/lib/apt/lists/* "$R"/var/cache/apt/*.bin
  cleanup
}

base_rootfs() {
  local key cache
  key=$(base_key)
  cache=$BASE_CACHE/base-$SUITE-$key.tar.zst
  rm -rf "$R"; mkdir -p "$R"
  if [ -f "$cache" ] && [ "${NO_CACHE:-0}" != 1 ]; then
    log "base rootfs from cache $(basename "$cache")"
    tar -C "$R" --zstd -xpf "$cache"
    return
  fi
  local t0=$SECONDS
  build_base
  log "base rootfs built in $((SECONDS - t0)) s; caching"
  # Other keys' bases stay (another clone or branch may still use them) but for the two newest: ~300 MB each.
  mkdir -p "$BASE_CACHE"
  find "$BASE_CACHE" -maxdepth 1 -name "base-$SUITE-*.tar.zst" -printf '%T@ %p\n' | sort -rn | tail -n +3 | cut -d' ' -f2- | xargs -r rm -f
  tar -C "$R" --zstd --numeric-owner -cpf "$cache.tmp.$$" . && mv "$cache.tmp.$$" "$cache"
}

# ---------------------------------------------------------------- 2. the gateway
install_app() {
  [ -f "$DIST/shadowgate.mjs" ] || die "$DIST missing: run 'make dist' first"
  # One epoll build per supported Node ABI; node-gyp-build loads the image node's (checked under qemu below).
  local addon n=0
  for addon in "$DIST"/node_modules/epoll/prebuilds/linux-arm64/node.abi*.node; do
    [ -f "$addon" ] && [ "$(od -An -tu2 -j18 -N2 "$addon" | tr -d ' ')" = 183 ] && n=$((n + 1))
  done
  [ "$n" -gt 0 ] || die "$DIST has no arm64 epoll (make dist cross-compiles it)"
  log "installing the gateway"
  NODE=/usr/bin/node sh "$DIST/scripts/install.sh" --root "$R" --no-node-check >"$WORK/install.log" 2>&1 \
    || { cat "$WORK/install.log" >&2; die "install.sh failed"; }
  # The image keeps its config on the data partition (written by shadowgate-boot-config).
  rm -rf "$R/etc/shadowgate"
  cp -a "$TOP/scripts/image/rootfs/." "$R/"
  chmod 755 "$R/usr/lib/shadowgate/"*
  # cp -a keeps the checkout's owner (a developer's uid under sudo); in the image they are root's.
  local tree
  for tree in base rootfs; do
    (cd "$TOP/scripts/image/$tree" && find . -mindepth 1 -print0) | (cd "$R" && xargs -0 chown -h 0:0)
  done
  # What `systemctl enable` does, by hand (the units' [Install] sections name these targets).
  local pair unit target
  for pair in shadowgate-boot-config.service:multi-user systemd-networkd.service:multi-user systemd-resolved.service:multi-user \
    systemd-timesyncd.service:sysinit ssh.service:multi-user shadowgate-update.path:multi-user \
    shadowgate-trial.service:multi-user; do
    unit=${pair%%:*}; target=${pair#*:}.target
    [ -f "$R/usr/lib/systemd/system/$unit" ] || die "unit $unit missing from the rootfs"
    mkdir -p "$R/etc/systemd/system/$target.wants"
    ln -sfn "/usr/lib/systemd/system/$unit" "$R/etc/systemd/system/$target.wants/$unit"
  done
  # Debian's sshd-keygen runs on every "first boot", and on a RAM-overlay root every boot is one:
  # it would make throwaway keys in /etc/ssh each time. The image's keys are on /data instead.
  ln -sf /dev/null "$R/etc/systemd/system/sshd-keygen.service"
  # Wi-Fi runs as wpa_supplicant@wlan0 when shadowgate.json has a "wifi" section; the D-Bus
  # wpa_supplicant.service that the package enables would idle in RAM on every board.
  rm -f "$R/etc/systemd/system/multi-user.target.wants/wpa_supplicant.service"
  # apt's daily timers would download package lists into the RAM overlay (tens of MB of a Pi's RAM,
  # gone at reboot); the image is updated by flashing or overlayroot-chroot, not in place.
  rm -f "$R"/etc/systemd/system/timers.target.wants/apt-daily*.timer
  chroot_mounts
  in_root systemd-sysusers >/dev/null
  # The arm64 natives and the bundle, run under qemu-user with the image's own node.
  in_root node -e "require('/opt/shadowgate/node_modules/epoll'); require('/opt/shadowgate/node_modules/@serialport/bindings-cpp')" \
    || die "arm64 native addons do not load with the image's node"
  # Through `shadowgate` on the PATH (install.sh's wrapper in /usr/local/bin), as a user on the image runs it.
  in_root /usr/local/bin/shadowgate check-config /usr/share/shadowgate/shadowgate.json >/dev/null \
    || die "the default boot config does not validate (or /usr/local/bin/shadowgate does not run)"
  # `systemd-analyze verify` inside the chroot (the target's systemd); any output is a failure.
  local out
  out=$(in_root systemd-analyze verify shadowgate.service shadowgate-boot-config.service \
    shadowgate-selftest.service shadowgate-update.path shadowgate-update.service shadowgate-trial.service 2>&1 || true)
  [ -z "$out" ] || die "systemd-analyze verify: $out"
  cleanup
  # Hygiene: identity and keys are made on the device.
  : >"$R/etc/machine-id"; rm -f "$R/var/lib/dbus/machine-id" "$R"/etc/ssh/ssh_host_*
  rm -f "$R/etc/resolv.conf"; ln -s ../run/systemd/resolve/stub-resolv.conf "$R/etc/resolv.conf"
  rm -f "$R/usr/sbin/policy-rc.d"
  install_ab
  echo shadowgate >"$R/etc/hostname"
  printf 'shadowgate %s (%s) built %s\n' "$VERSION" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    "$(date -u -d "@$SOURCE_DATE_EPOCH" +%F)" >"$R/etc/shadowgate-image"
}

# A/B updates: the card's fixed MBR disk id names both root slots by PARTUUID (the same root image is
# written to either, so labels cannot tell them apart); RAUC, fw_env.config and the udev rule use it.
DISK_ID=5347ab01
install_ab() {
  local f kv
  for f in etc/rauc/system.conf etc/udev/rules.d/61-shadowgate-card.rules; do
    grep -q "$DISK_ID" "$R/$f" || die "$f does not name the card's disk id $DISK_ID"
  done
  grep -q "$DISK_ID" scripts/image/uboot/boot.cmd || die "boot.cmd does not name the card's disk id $DISK_ID"
  # The image trusts the update signing certificate (development pair unless SHADOWGATE_SIGNING_* are set).
  install -m 0644 "$SIGN_CERT" "$R/etc/rauc/keyring.pem"
  # Each slot boots its own kernel: boot.scr loads /boot/vmlinuz and /boot/initrd.img from the slot's ext4
  # (hard links: U-Boot's ext4 reader needs no symlink support for them).
  kv=$(cd "$R/boot" && find . -maxdepth 1 -name 'vmlinuz-*' | sed 's|^./vmlinuz-||' | sort -V | tail -n1)
  if [ -z "$kv" ] || [ ! -f "$R/boot/initrd.img-$kv" ]; then die "no kernel and initrd in $R/boot"; fi
  ln -f "$R/boot/vmlinuz-$kv" "$R/boot/vmlinuz"
  ln -f "$R/boot/initrd.img-$kv" "$R/boot/initrd.img"
}

# ---------------------------------------------------------------- 3. the disk image
MiB=$((1024 * 1024))
assemble() {
  local boot=$WORK/bootfs data=$WORK/datafs img=$WORK/shadowgate.img
  log "assembling"
  # /boot/firmware is its own FAT partition: move its files out of the root tree.
  rm -rf "$boot" "$data"; mkdir -p "$boot" "$data"/{shadowgate,config,ssh,rauc}
  cp -a "$R/boot/firmware/." "$boot/"
  find "$R/boot/firmware" -mindepth 1 -delete
  cp "$R/usr/share/shadowgate/shadowgate.json" "$R/usr/share/shadowgate/shadowgate.example.json" \
    "$R/usr/share/shadowgate/README.txt" "$boot/"
  boot_loader "$boot"
  chmod 0700 "$data/ssh"
  # The gateway (group shadowgate) reads config/config.json; boot-config keeps these modes.
  chmod 0750 "$data/config"
  chgrp "$(awk -F: '$1 == "shadowgate" { print $3 }' "$R/etc/group")" "$data/config"
  mkdir -p "$R/data"

  # Each root slot has room for a root 30 % + 200 MB bigger than this one (later versions grow);
  # slot B stays empty (zeros, sparse) until the first update writes it.
  local boot_mb=256 root_mb data_mb=128
  root_mb=$(( $(du -sm "$R" | cut -f1) * 13 / 10 + 200 ))
  rm -f "$WORK"/*.part
  mkfs.vfat -C -F 32 -n RASPIFIRM "$WORK/boot.part" $((boot_mb * 1024)) >/dev/null
  mcopy -s -p -i "$WORK/boot.part" "$boot"/* ::
  mkfs.ext4 -q -F -L RASPIROOT -E root_owner=0:0 -d "$R" "$WORK/root.part" "${root_mb}M"
  mkfs.ext4 -q -F -L SGDATA -E root_owner=0:0 -d "$data" "$WORK/data.part" "${data_mb}M"

  local s1=4 s2 s3 s4 total
  s2=$((s1 + boot_mb)); s3=$((s2 + root_mb)); s4=$((s3 + root_mb)); total=$((s4 + data_mb + 1))
  rm -f "$img"; truncate -s "${total}M" "$img"
  sfdisk --quiet "$img" <<PT
label: dos
label-id: 0x$DISK_ID
unit: sectors
start=$((s1 * MiB / 512)), size=$((boot_mb * MiB / 512)), type=c, bootable
start=$((s2 * MiB / 512)), size=$((root_mb * MiB / 512)), type=83
start=$((s3 * MiB / 512)), size=$((root_mb * MiB / 512)), type=83
start=$((s4 * MiB / 512)), size=$((data_mb * MiB / 512)), type=83
PT
  dd if="$WORK/boot.part" of="$img" bs=1M seek=$s1 conv=notrunc,sparse status=none
  dd if="$WORK/root.part" of="$img" bs=1M seek=$s2 conv=notrunc,sparse status=none
  dd if="$WORK/data.part" of="$img" bs=1M seek=$s4 conv=notrunc,sparse status=none
  # The boot state (BOOT_ORDER, BOOT_x_LEFT) in both redundant copies at 1 and 2 MiB, before p1
  # (scripts/image/uboot/boot.cmd, /etc/fw_env.config): slot A with 3 tries, B empty.
  printf 'BOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=0\n' | mkenvimage -r -s 0x4000 -o "$WORK/env.part" -
  dd if="$WORK/env.part" of="$img" bs=1M seek=1 conv=notrunc status=none
  dd if="$WORK/env.part" of="$img" bs=1M seek=2 conv=notrunc status=none
  rm -f "$WORK"/*.part
  log "image: $img ($((total)) MiB, $(du -m "$img" | cut -f1) MiB allocated)"
}

# The FAT partition boots U-Boot (the Pi firmware loads it as its "kernel"), and U-Boot runs boot.scr,
# which boots the kernel of the chosen root slot: the kernels and initrds raspi-firmware copied here
# are not used, and neither is its cmdline.txt (its arguments move to bootargs.txt, without root=).
boot_loader() {
  local boot=$1 args
  find "$boot" -maxdepth 1 \( -name 'vmlinuz*' -o -name 'initrd.img*' \) -delete
  args=$(tr -s ' \n' '  ' <"$boot/cmdline.txt" | tr ' ' '\n' | grep -v '^root=\|^rootwait$\|^rw$\|^$' | tr '\n' ' ')
  rm -f "$boot/cmdline.txt"
  printf 'bootargs_extra=%s\n' "${args% }" >"$boot/bootargs.txt"
  grep -v '^kernel=\|^initramfs ' "$boot/config.txt" >"$boot/config.txt.new"
  cat >>"$boot/config.txt.new" <<CFG

# shadowgate: U-Boot (rpi_arm64: Pi 3, 4, Zero 2 W, CM4) runs boot.scr, which boots root slot A or B.
arm_64bit=1
kernel=u-boot.bin
CFG
  mv "$boot/config.txt.new" "$boot/config.txt"
  cp "$R/usr/lib/u-boot/rpi_arm64/u-boot.bin" "$boot/u-boot.bin"
  cp scripts/image/uboot/boot.cmd "$boot/boot.cmd"
  mkimage -q -A arm64 -O linux -T script -C none -n "shadowgate A/B boot" -d scripts/image/uboot/boot.cmd "$boot/boot.scr" >/dev/null
}

compress() {
  local out=$TOP/build/shadowgate-$VERSION-arm64.img.zst
  zstd -q -f -T0 -10 "$WORK/shadowgate.img" -o "$out"
  (cd "$(dirname "$out")" && sha256sum "$(basename "$out")" >"$(basename "$out").sha256")
  log "$(basename "$out"): $(du -m "$out" | cut -f1) MiB"
}

main() {
  local t0=$SECONDS
  mkdir -p "$WORK"
  # One build at a time: a second one would delete the rootfs under the first.
  exec 9>"$WORK/.lock"
  flock -n 9 || die "another image build is running (lock $WORK/.lock)"
  preflight
  [ "${1:-}" != check ] || return 0
  # shellcheck source=scripts/image/signing.sh
  . scripts/image/signing.sh
  base_rootfs
  [ "${1:-}" != base ] || { log "base only: done in $((SECONDS - t0)) s"; return; }
  install_app
  assemble
  [ "${IMAGE_COMPRESS:-1}" = 0 ] || compress
  log "done in $((SECONDS - t0)) s"
}
[ "${1:-}" != key ] || { base_key; exit 0; }   # the base cache key (for developers)
main "$@"
