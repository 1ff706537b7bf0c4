/**
 * How the runners inside the fake-sysfs namespace end: one JSON line on stdout (the result, or `{ error }`)
 * and an exit — the test reads that line. They exit without waiting: onoff's epoll watcher and the children's
 * handles may keep the loop alive in a throwaway process. Past `timeoutMs`, `onTimeout` adds what it knows and
 * stops what it started, and the runner exits 3.
 */
export function runThrowaway(main: () => Promise<unknown>, timeoutMs: number, onTimeout: () => Record<string, unknown>): void {
  const timer = setTimeout(() => {
    console.log(JSON.stringify({ error: 'runner timed out', ...onTimeout() }));
    process.exit(3);
  }, timeoutMs);
  main().then(
    (result) => {
      console.log(JSON.stringify(result));
      clearTimeout(timer);
      process.exit(0);
    },
    (e: unknown) => {
      console.log(JSON.stringify({ error: String((e as Error)?.stack ?? e) }));
      process.exit(1);
    },
  );
}
