/**
 * BCM number → sysfs number. On kernel 6.6+ sysfs numbers are chip base + line (Pi 4: base 512,
 * Pi 5: pinctrl-rp1 at 571), and a plain BCM number is refused with EINVAL, so the base is read from
 * /sys/class/gpio/gpiochip*\/{label,base}. The chip is found by LABEL, never by taking the lowest base:
 * a Pi 5 has brcmstb chips at 512 and 544 below pinctrl-rp1.
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';

export const DEFAULT_SYSFS_GPIO = '/sys/class/gpio';

/** Labels of the chips that carry a Pi's header, most specific first (rp1 is the Pi 5's header chip). */
export const HEADER_CHIP_LABELS = ['pinctrl-rp1', 'pinctrl-bcm2711', 'pinctrl-bcm2835', 'pinctrl-bcm2712'] as const;

export interface GpioChipInfo {
  /** Directory name (gpiochip512). */
  dir: string;
  label: string;
  base: number;
  ngpio: number;
}

// Async: a GPIO bus also starts on a live config change, when the event loop serves everything else.
const readText = async (path: string): Promise<string> => (await readFile(path, 'utf8')).trim();

/** Every gpiochip sysfs shows; unreadable entries are skipped. Throws when the directory is missing. */
export async function listGpioChips(sysfsRoot: string = DEFAULT_SYSFS_GPIO): Promise<GpioChipInfo[]> {
  let entries: string[];
  try {
    entries = (await readdir(sysfsRoot)).filter((d) => /^gpiochip\d+$/.test(d));
  } catch (e) {
    throw new Error(`cannot read ${sysfsRoot} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): ` +
      'the kernel has no GPIO sysfs interface (CONFIG_GPIO_SYSFS) or this is not a Raspberry Pi');
  }
  const chips: GpioChipInfo[] = [];
  for (const dir of entries) {
    try {
      const base = Number(await readText(join(sysfsRoot, dir, 'base')));
      const ngpio = Number(await readText(join(sysfsRoot, dir, 'ngpio')));
      const label = await readText(join(sysfsRoot, dir, 'label'));
      if (Number.isInteger(base) && Number.isInteger(ngpio)) chips.push({ dir, label, base, ngpio });
    } catch {
      // A chip vanishing mid-scan or an unreadable attribute is not ours to judge; skip it.
    }
  }
  return chips.sort((a, b) => a.base - b.base);
}

/**
 * The header chip: the one labelled `wanted` (bus `chip`, or the board's label) when given, else the
 * first of HEADER_CHIP_LABELS present. `wanted` may also be a directory name ("gpiochip571").
 */
export function pickHeaderChip(chips: readonly GpioChipInfo[], wanted?: string): GpioChipInfo {
  const seen = chips.map((c) => `${c.dir}="${c.label}" base ${c.base}`).join(', ') || 'none';
  if (wanted !== undefined && wanted !== '') {
    const chip = chips.find((c) => c.label === wanted || c.dir === wanted);
    if (!chip) throw new Error(`no gpiochip labelled "${wanted}" (found: ${seen})`);
    return chip;
  }
  for (const label of HEADER_CHIP_LABELS) {
    const chip = chips.find((c) => c.label === label);
    if (chip) return chip;
  }
  throw new Error(`no Raspberry Pi header gpiochip (${HEADER_CHIP_LABELS.join(', ')}) found (found: ${seen}); ` +
    'set "chip" on the gpio bus to the label of the chip to use');
}

/** Maps BCM numbers to sysfs numbers on one chip. */
export interface ChipMapping {
  chip: GpioChipInfo;
  toSysfs(bcm: number): number;
}

export function chipMapping(chip: GpioChipInfo): ChipMapping {
  return {
    chip,
    toSysfs(bcm: number): number {
      if (!Number.isInteger(bcm) || bcm < 0 || bcm >= chip.ngpio) {
        throw new Error(`BCM ${bcm} is not a line of ${chip.label} (0..${chip.ngpio - 1})`);
      }
      return chip.base + bcm;
    },
  };
}

/** The whole lookup: scan `sysfsRoot`, pick by label, map. */
export async function resolveChipMapping(opts: { sysfsRoot?: string; label?: string } = {}): Promise<ChipMapping> {
  return chipMapping(pickHeaderChip(await listGpioChips(opts.sysfsRoot), opts.label));
}
