/**
 * A leak planted in the soaked gateway (`SOAK_PLANT_LEAK=MB` a minute, loaded with `node --import`), to show the
 * soak's verdict misses a real one: it retains that many MiB a minute, written through so the pages count in RSS.
 * Never part of the product or of a campaign's pass.
 */
const perMinute = Number(process.env.SOAK_PLANT_LEAK);
if (perMinute > 0) {
  const kept = [];
  setInterval(() => kept.push(Buffer.alloc(2 ** 20, 1)), 60_000 / perMinute).unref();
}
