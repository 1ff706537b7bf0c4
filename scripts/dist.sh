#!/bin/sh
# `make dist`: the release tree build/shadowgate/ (DIST_OUT=DIR to change it) and a tarball of it
# beside it (build/shadowgate-<version>.tar.gz):
#   shadowgate.mjs        dist/ as one esbuild bundle (ESM; every pure-JS dependency inside)
#   node_modules/         only the native parts, kept external: @serialport/bindings-cpp (N-API
#                         prebuilds for linux-x64/arm64/arm, glibc) and onoff → epoll, with their
#                         runtime dependencies; no sources, headers or build files
#   dist/config/schema.json, dist/console/, board/{models,boards,examples}   files the code reads at run time
#   systemd/, scripts/install.sh, docs/, package.json        what install.sh and users need
# Needs `make build` first (it bundles dist/, the tsc output). The tree is for a Pi: onoff's epoll,
# which has no prebuilds, is cross-compiled for arm64 (g++-aarch64-linux-gnu, Node 20's headers), and
# the build fails unless every native addon has a linux-arm64 binary. DIST_ARCH=host keeps this
# machine's own epoll build instead (a tree for the build machine itself).
set -eu

cd "$(dirname "$0")/.."
OUT=${DIST_OUT:-build/shadowgate}
[ -f dist/main.js ] || { echo "dist.sh: dist/main.js missing; run 'make build' first" >&2; exit 1; }
VERSION=$(node -p 'require("./package.json").version')
# Staged inside the checkout so the bundler resolves node_modules from it.
mkdir -p build
STAGE=$(mktemp -d build/.dist-stage.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT INT TERM

# Code finds schema.json and board/ relative to its own module (import.meta.url). In a bundle all
# modules share one URL, so each module's import.meta.url is rewritten to the URL its file would
# have in the release tree (OUT/dist/<same path>); the files themselves are laid out there below.
cp -r dist "$STAGE/dist"
find "$STAGE/dist" -name '*.js' | while read -r f; do
  rel=${f#"$STAGE/"}
  sed -i "s#import\.meta\.url#new URL(\"./$rel\", import.meta.url).href#g" "$f"
done

rm -rf "$OUT"
mkdir -p "$OUT"
# esbuild is a pinned devDependency (node_modules/.bin/esbuild is what `npx esbuild` runs).
# require() of the external natives from an ESM bundle needs a real require.
node_modules/.bin/esbuild "$STAGE/dist/main.js" --bundle --platform=node --target=node20 --format=esm \
  --outfile="$OUT/shadowgate.mjs" --log-level=warning --legal-comments=none \
  --external:@serialport/bindings-cpp --external:onoff --external:epoll \
  --banner:js="import { createRequire as __sgRequire } from 'node:module'; const require = __sgRequire(import.meta.url);"

mkdir -p "$OUT/dist/config" "$OUT/board" "$OUT/scripts" "$OUT/systemd" "$OUT/docs"
cp src/config/schema.json "$OUT/dist/config/schema.json"
# The web console (make build): found by the bundle at OUT/dist/console, like schema.json above.
cp -r dist/console "$OUT/dist/console"
cp -r board/models board/boards board/examples "$OUT/board/"
cp board/demo.json "$OUT/board/demo.json"
cp systemd/shadowgate.service systemd/shadowgate.sysusers systemd/70-shadowgate-gpio.rules "$OUT/systemd/"
cp scripts/install.sh "$OUT/scripts/install.sh"
cp docs/*.md "$OUT/docs/"
[ ! -f README.md ] || cp README.md "$OUT/"
node -e '
  const p = require("./package.json");
  const out = { name: p.name, version: p.version, description: p.description, license: p.license,
    type: "module", engines: p.engines, bin: { shadowgate: "shadowgate.mjs" } };
  require("fs").writeFileSync(process.argv[1], JSON.stringify(out, null, 2) + "\n");
' "$OUT/package.json"

# The native packages and their runtime dependency closure, resolved the way Node resolves them.
node - "$OUT" <<'EOF'
const fs = require('fs');
const path = require('path');
const out = process.argv[2];
const root = process.cwd();
const BUILD_ONLY = new Set(['nan', 'node-addon-api']); // C++ headers, not needed at run time
const seen = new Map(); // package dir (relative to root) → name
function resolve(name, fromDir) {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    const cand = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(cand, 'package.json'))) return cand;
    if (dir === root || dir === path.dirname(dir)) throw new Error(`cannot resolve ${name} from ${fromDir}`);
  }
}
function visit(name, fromDir) {
  if (BUILD_ONLY.has(name)) return;
  const dir = resolve(name, fromDir);
  const rel = path.relative(root, dir);
  if (seen.has(rel)) return;
  seen.set(rel, name);
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  for (const dep of Object.keys(pkg.dependencies ?? {})) visit(dep, dir);
}
for (const name of ['@serialport/bindings-cpp', 'onoff']) visit(name, root);
const SKIP = new Set(['node_modules', 'test', 'tests', 'binding.gyp', 'obj.target', 'deps', '.github', 'docs', 'example', 'examples', 'integration-test']);
function copy(from, to) {
  fs.mkdirSync(to, { recursive: true });
  for (const e of fs.readdirSync(from, { withFileTypes: true })) {
    // src/ of a native package is its C++ (needed only to build); of a JS package it is the code.
    if (e.name === 'src' && fs.existsSync(path.join(from, 'binding.gyp'))) continue;
    if (SKIP.has(e.name) || /\.(d\.ts|map|md|cc|h|c|o|mk)$/.test(e.name) && !/^(LICENSE|README)/i.test(e.name)) continue;
    const a = path.join(from, e.name);
    const b = path.join(to, e.name);
    if (e.isDirectory()) {
      // Keep the prebuilds a Pi or a PC can load: linux x64/arm64/arm, glibc.
      if (path.basename(from) === 'prebuilds' && !/^linux-(x64|arm64|arm)$/.test(e.name)) continue;
      copy(a, b);
    } else if (e.isFile() && !/\.musl\.node$/.test(e.name)) fs.copyFileSync(a, b);
  }
}
for (const rel of [...seen.keys()].sort()) copy(path.join(root, rel), path.join(out, rel));
console.log(`natives: ${[...seen.keys()].map((r) => r.replace(/^node_modules\//, '')).join(', ')}`);
EOF

# onoff's epoll ships no prebuilds. For a Pi it is cross-compiled against Node's headers for the
# image's Node major: the addon uses nan (V8's C++ API), so it binds to one NODE_MODULE_VERSION, and
# the build machine's headers serve only when its Node has the same one (Debian trixie: Node 20, 115).
TARGET_ABI=${TARGET_NODE_ABI:-115}
if [ "${DIST_ARCH:-arm64}" = arm64 ]; then
  host_abi=$(node -p process.versions.modules)
  [ "$host_abi" = "$TARGET_ABI" ] || { echo "dist.sh: epoll for arm64 needs Node headers with ABI $TARGET_ABI (Node 20); this node has $host_abi" >&2; exit 1; }
  command -v aarch64-linux-gnu-g++ >/dev/null || { echo "dist.sh: aarch64-linux-gnu-g++ missing (apt-get install g++-aarch64-linux-gnu)" >&2; exit 1; }
  GYP=$(npm root -g 2>/dev/null)/npm/node_modules/node-gyp/bin/node-gyp.js
  [ -f "$GYP" ] || { echo "dist.sh: node-gyp not found at $GYP" >&2; exit 1; }
  # Built inside the checkout so binding.gyp's require('nan') resolves from node_modules/.
  cp -r node_modules/epoll "$STAGE/epoll" && rm -rf "$STAGE/epoll/build"
  NODEDIR=$(dirname "$(dirname "$(command -v node)")")
  [ -f "$NODEDIR/include/node/node.h" ] || NODEDIR=/usr
  (cd "$STAGE/epoll" && CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++ LINK=aarch64-linux-gnu-g++ AR=aarch64-linux-gnu-ar \
    node "$GYP" rebuild --arch=arm64 --nodedir="$NODEDIR" >"../epoll-build.log" 2>&1) \
    || { cat "$STAGE/epoll-build.log" >&2; echo "dist.sh: epoll cross-build failed" >&2; exit 1; }
  rm -rf "$OUT/node_modules/epoll/build"
  mkdir -p "$OUT/node_modules/epoll/build/Release"
  cp "$STAGE/epoll/build/Release/epoll.node" "$OUT/node_modules/epoll/build/Release/epoll.node"
fi

# Which native binaries the tree holds; a Pi needs the arm64 ones (ELF e_machine 183 = AArch64).
elf_machine() { node -e 'const b=require("fs").readFileSync(process.argv[1]); console.log(b.readUInt16LE(18))' "$1" 2>/dev/null; }
arm64=yes
if ls "$OUT"/node_modules/@serialport/bindings-cpp/prebuilds/linux-arm64/*glibc.node >/dev/null 2>&1; then
  echo "arm64: @serialport/bindings-cpp prebuild present"
else
  echo "arm64: @serialport/bindings-cpp prebuild MISSING"; arm64=no
fi
if [ "$(elf_machine "$OUT/node_modules/epoll/build/Release/epoll.node")" = 183 ]; then
  echo "arm64: epoll present (cross-compiled, NODE_MODULE_VERSION $TARGET_ABI)"
else
  echo "arm64: epoll MISSING (DIST_ARCH=host: this machine's $(uname -m) build)"; arm64=no
fi
if [ "$arm64" = no ] && [ "${DIST_ARCH:-arm64}" = arm64 ]; then
  echo "dist.sh: arm64 natives missing" >&2; exit 1
fi

TAR=$(dirname "$OUT")/shadowgate-$VERSION.tar.gz
tar czf "$TAR" -C "$(dirname "$OUT")" "$(basename "$OUT")"
echo "dist: $OUT ($(du -sh "$OUT" | cut -f1)), $TAR ($(du -h "$TAR" | cut -f1))"
