// Builds the web console (src/console/) into dist/console/: one esbuild bundle (preact + htm + uPlot),
// the page and one stylesheet, each also gzip-compressed (level 9) for the server to send as it is.
// Fails when the whole console is over its budget of 150 KB gzipped (a Pi serves it over Wi-Fi).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

export const BUDGET_GZ = 150 * 1024;
const out = 'dist/console';
await mkdir(out, { recursive: true });
const bundle = await build({
  entryPoints: ['src/console/main.js'], bundle: true, format: 'esm', minify: true, target: ['es2020'],
  write: false, legalComments: 'none', logLevel: 'warning',
});
const css = `${await readFile('src/console/app.css', 'utf8')}\n${await readFile('node_modules/uplot/dist/uPlot.min.css', 'utf8')}`;
const files = {
  'index.html': await readFile('src/console/index.html'),
  'app.js': Buffer.from(bundle.outputFiles[0].contents),
  'app.css': Buffer.from(css),
};
let total = 0;
const sizes = [];
for (const [name, data] of Object.entries(files)) {
  const gz = gzipSync(data, { level: 9 });
  total += gz.length;
  sizes.push(`${name} ${(data.length / 1024).toFixed(1)} KB (${(gz.length / 1024).toFixed(1)} KB gz)`);
  await writeFile(`${out}/${name}`, data);
  await writeFile(`${out}/${name}.gz`, gz);
}
console.log(`console: ${sizes.join(', ')}; ${(total / 1024).toFixed(1)} KB gzipped of ${BUDGET_GZ / 1024} KB`);
if (total > BUDGET_GZ) {
  console.error(`console: over its budget of ${BUDGET_GZ / 1024} KB gzipped`);
  process.exit(1);
}
