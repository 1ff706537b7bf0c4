# shadowgate A/B boot script: U-Boot's distro boot runs it (boot.scr on the FAT partition, compiled from
# this file by scripts/build-image.sh with mkimage). It picks the root slot RAUC asked for, counts the try
# down and boots that slot's own kernel and initrd, so an update bundle brings its kernel along.
#
# Boot state, shared with RAUC (bootloader=uboot: fw_printenv/fw_setenv from libubootenv):
#   BOOT_ORDER   slots in the order to try, e.g. "B A"
#   BOOT_x_LEFT  tries left for slot x; this script takes one before booting x, `rauc status mark-good`
#                gives 3 back, a fresh install gets 1 (a single trial boot)
# The state lives in two raw copies in the card's unused gap before the FAT partition (sectors 0x800 and
# 0x1000: 1 and 2 MiB, 16 KiB each), in libubootenv's redundant layout: CRC32, a generation byte, then the
# variables. Whoever writes (this script or fw_setenv) writes the older copy with the next generation, so
# a power cut during a write leaves the other copy valid. U-Boot's own environment (flash on qemu,
# uboot.env on the Pi's FAT) is neither read nor written.
# Slot A is partition 2, B partition 3; root= names them by the card's fixed MBR disk id (PARTUUID).

setenv sg_vars "BOOT_ORDER BOOT_A_LEFT BOOT_B_LEFT"
setenv sg_sect0 0x800
setenv sg_sect1 0x1000
# Scratch buffers below everything loaded later (the kernel comes last).
setexpr sg_e0 ${kernel_addr_r} + 0x0
setexpr sg_e1 ${kernel_addr_r} + 0x10000
setexpr sg_tmp ${kernel_addr_r} + 0x20000
setexpr sg_out ${kernel_addr_r} + 0x30000

# Defaults for a card whose two copies are both unreadable: slot A, as the image was flashed.
setenv BOOT_ORDER "A B"
setenv BOOT_A_LEFT 3
setenv BOOT_B_LEFT 0

${devtype} read ${sg_e0} ${sg_sect0} 0x20
${devtype} read ${sg_e1} ${sg_sect1} 0x20
setexpr sg_f0a ${sg_e0} + 4
setexpr sg_f1a ${sg_e1} + 4
setexpr.b sg_f0 *${sg_f0a}
setexpr.b sg_f1 *${sg_f1a}
# The newer copy as libubootenv decides it: the higher generation, 0 after ff counts as newer.
setenv sg_new 0
setenv sg_old 1
if itest.b ${sg_f1} > ${sg_f0}; then setenv sg_new 1; setenv sg_old 0; fi
if itest.b ${sg_f0} == ff && itest.b ${sg_f1} == 0; then setenv sg_new 1; setenv sg_old 0; fi
if itest.b ${sg_f1} == ff && itest.b ${sg_f0} == 0; then setenv sg_new 0; setenv sg_old 1; fi

# `env import -c` wants the CRC right before the data: move it over the generation byte, then import.
# A copy whose CRC does not match is refused and leaves the variables as they were.
setenv sg_cur none
setenv sg_import 'if test ${sg_i} = 0; then setenv sg_a ${sg_e0}; else setenv sg_a ${sg_e1}; fi; cp.b ${sg_a} ${sg_tmp} 4; setexpr sg_a ${sg_a} + 1; cp.b ${sg_tmp} ${sg_a} 4; if env import -c ${sg_a} 0x3fff ${sg_vars}; then setenv sg_cur ${sg_i}; fi'
setenv sg_i ${sg_old}
run sg_import
setenv sg_i ${sg_new}
run sg_import
echo "shadowgate: boot state copy ${sg_cur} (generations ${sg_f0}/${sg_f1}): BOOT_ORDER=${BOOT_ORDER} A=${BOOT_A_LEFT} B=${BOOT_B_LEFT}"

# Writes the variables into the copy that is not the current one, with the next generation.
setenv sg_save 'setenv sg_dst 0; setenv sg_gen 0; if test ${sg_cur} = 0; then setenv sg_dst 1; setenv sg_gen ${sg_f0}; fi; if test ${sg_cur} = 1; then setenv sg_gen ${sg_f1}; fi; if itest.b ${sg_gen} == ff; then setenv sg_gen 0; else setexpr.b sg_gen ${sg_gen} + 1; fi; setexpr sg_a ${sg_out} + 1; env export -c -s 0x3fff ${sg_a} ${sg_vars}; cp.b ${sg_a} ${sg_tmp} 4; cp.b ${sg_tmp} ${sg_out} 4; setexpr sg_a ${sg_out} + 4; mw.b ${sg_a} ${sg_gen} 1; if test ${sg_dst} = 0; then ${devtype} write ${sg_out} ${sg_sect0} 0x20; setenv sg_f0 ${sg_gen}; else ${devtype} write ${sg_out} ${sg_sect1} 0x20; setenv sg_f1 ${sg_gen}; fi; setenv sg_cur ${sg_dst}'

# The first slot in BOOT_ORDER with a try left; its try is taken (and written) before it boots.
setenv sg_slot
for s in ${BOOT_ORDER}; do
  if test -z "${sg_slot}"; then
    if test "${s}" = A && test ${BOOT_A_LEFT} -gt 0; then
      setexpr BOOT_A_LEFT ${BOOT_A_LEFT} - 1; setenv sg_slot A; setenv sg_part 2
    fi
  fi
  if test -z "${sg_slot}"; then
    if test "${s}" = B && test ${BOOT_B_LEFT} -gt 0; then
      setexpr BOOT_B_LEFT ${BOOT_B_LEFT} - 1; setenv sg_slot B; setenv sg_part 3
    fi
  fi
done
if test -z "${sg_slot}"; then
  # No slot has a try left (each failed its tries): better to try them all again than to stop.
  echo "shadowgate: no slot has a try left; giving both slots 3 tries again"
  setenv BOOT_A_LEFT 3
  setenv BOOT_B_LEFT 3
  run sg_save
  reset
fi
run sg_save
echo "shadowgate: booting slot ${sg_slot} (partition ${sg_part}; tries left A=${BOOT_A_LEFT} B=${BOOT_B_LEFT})"

# Load addresses from kernel_addr_r up: the kernel (trixie's arm64 vmlinuz is an uncompressed Image, ~40 MB;
# were it gzip, booti would unpack it to kernel_comp_addr_r), the initrd 96 MiB up, the device tree from
# the firmware (the Pi's, with config.txt's overlays) or qemu's.
setexpr kernel_comp_addr_r ${kernel_addr_r} + 0x2000000
setexpr sg_rd ${kernel_addr_r} + 0x6000000
if test -n "${fdt_addr}"; then setenv sg_fdt ${fdt_addr}; else setenv sg_fdt ${fdtcontroladdr}; fi

# Extra kernel arguments from the FAT partition (bootargs.txt: one line "bootargs_extra=...").
setenv bootargs_extra
if load ${devtype} ${devnum}:${distro_bootpart} ${sg_tmp} bootargs.txt; then env import -t ${sg_tmp} ${filesize} bootargs_extra; fi

if load ${devtype} ${devnum}:${sg_part} ${kernel_addr_r} /boot/vmlinuz; then
  setenv kernel_comp_size ${filesize}
  if load ${devtype} ${devnum}:${sg_part} ${sg_rd} /boot/initrd.img; then
    setenv bootargs "root=PARTUUID=5347ab01-0${sg_part} rootwait rauc.slot=${sg_slot} panic=10 ${bootargs_extra}"
    booti ${kernel_addr_r} ${sg_rd}:${filesize} ${sg_fdt}
  fi
fi
# Not bootable (an empty or damaged slot): no tries left for it, and start over with the next one.
echo "shadowgate: slot ${sg_slot} has no bootable kernel; trying the next slot"
if test ${sg_slot} = A; then setenv BOOT_A_LEFT 0; else setenv BOOT_B_LEFT 0; fi
run sg_save
reset
