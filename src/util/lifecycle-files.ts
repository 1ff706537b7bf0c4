/**
 * Names of the files that ask for a restore or a factory reset, shared by the gateway (which carries them
 * out at its start, runtime/lifecycle.ts) and `shadowgate boot-config` (which takes them from the boot
 * partition on the SD image, cli/boot-lifecycle.ts).
 */
export const LIFECYCLE_FILES = {
  /** On the boot partition: a backup to restore at the next boot. */
  bootRestore: 'shadowgate-restore.tar.gz',
  /** On the boot partition: any file of this name resets the gateway at the next boot. */
  bootReset: 'shadowgate-factory-reset',
  /** In data_dir: a backup handed over by boot-config, read and checked at the gateway's next start. */
  restoreUpload: 'restore-upload.tar.gz',
  /** In data_dir: a checked restore, staged, applied at the next start. */
  restorePending: 'restore.pending',
  /** In data_dir: a reset asked for, carried out at the next start. */
  resetPending: 'factory-reset.pending',
  /** In data_dir: the outcome of the last restore or reset (shown in /health/shadow as `lifecycle`). */
  status: 'lifecycle.json',
} as const;
