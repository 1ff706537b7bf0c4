#!/bin/sh
# `make dist`: the release tree build/shadowgate/ (DIST_OUT=DIR to change it) and a tarball of it
# beside it (build/shadowgate-<version>.tar.gz):
#   shadowgate.mjs        dist/ as one esbuild bundle (ESM; every pure-JS dependency inside)
#   node_modules/         only the native parts, kept external: @serialport/bindings-cpp (N-API
#                         prebuilds for linux-x64/arm64/arm, glibc) and onoff → epoll (built here for
#                         Node 20, 22 and 24, arm64 and this machine's arch), with their runtime
#                         dependencies; no sources, headers or build files
#   dist/config/schema.json, dist/console/, board/{models,boards,examples}   files the code reads at run time
#   systemd/, scripts/install.sh, docs/, package.json        what install.sh and users need
# Needs `make build` first (it bundles dist/, the tsc output). The tree is for a Pi and loads on this
# machine too: onoff's epoll, which has no prebuilds, is cross-compiled for arm64 (g++-aarch64-linux-gnu)
# and built for this machine, each against Node 20's, 22's and 24's headers, and the build fails unless
# every native addon has linux-arm64 binaries. DIST_ARCH=host builds only this machine's arch.
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
# V8 keeps a module's source in memory for as long as it runs (functions compile lazily from it), as a one-byte
# string if every character is Latin-1 and as a two-byte one otherwise: one dash in a comment doubled the
# bundle's 2.7 MB in the heap. esbuild writes code as ASCII already; what it keeps of comments is escaped too.
node -e '
  const fs = require("fs");
  const text = fs.readFileSync(process.argv[1], "utf8");
  fs.writeFileSync(process.argv[1], text.replace(/[^\x00-\x7f]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0")));
' "$OUT/shadowgate.mjs"

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
for (const name of ['@serialport/bindings-cpp', 'onoff', 'node-gyp-build']) visit(name, root);
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

# onoff's epoll ships no prebuilds, and it uses nan (V8's C++ API): each binary binds to one
# NODE_MODULE_VERSION. So it is built for every supported Node major (20, 22, 24; the official
# binaries' headers from the npm registry, scripts/node-versions.mjs) and for arm64 (a Pi,
# cross-compiled) plus this machine's own arch, as prebuilds/linux-<arch>/node.abi<N>.node, and the
# tree's epoll.js loads it through node-gyp-build (in the tree for serialport already), which picks
# the running Node's ABI. DIST_ARCH=host builds only this machine's arch. Builds are cached per epoll
# version, Node version and arch beside the Node releases (scripts/node-versions.mjs's cache, outside the checkout).
host_arch=$(node -p process.arch)
case "${DIST_ARCH:-arm64}" in
  arm64) ARCHES=arm64; [ "$host_arch" = arm64 ] || ARCHES="arm64 $host_arch" ;;
  host) ARCHES=$host_arch ;;
  *) echo "dist.sh: DIST_ARCH must be arm64 or host, not $DIST_ARCH" >&2; exit 1 ;;
esac
NODE_DIRS=$(node scripts/node-versions.mjs) || { echo "dist.sh: cannot get the Node.js headers (scripts/node-versions.mjs)" >&2; exit 1; }
GYP=$(npm root -g 2>/dev/null)/npm/node_modules/node-gyp/bin/node-gyp.js
[ -f "$GYP" ] || { echo "dist.sh: node-gyp not found at $GYP" >&2; exit 1; }
EPOLL_VERSION=$(node -p 'require("./node_modules/epoll/package.json").version')
EPOLL_OUT="$OUT/node_modules/epoll"
rm -rf "$EPOLL_OUT/build"
for arch in $ARCHES; do
  mkdir -p "$EPOLL_OUT/prebuilds/linux-$arch"
  echo "$NODE_DIRS" | while read -r major nodedir; do
    abi=$(sed -n 's/^#define NODE_MODULE_VERSION \([0-9][0-9]*\).*/\1/p' "$nodedir/include/node/node_version.h")
    [ -n "$abi" ] || { echo "dist.sh: no NODE_MODULE_VERSION in $nodedir" >&2; exit 1; }
    cached="$(dirname "$nodedir")/epoll-$EPOLL_VERSION/$(basename "$nodedir")/linux-$arch/node.abi$abi.node"
    if [ ! -f "$cached" ]; then
      # Built inside the checkout so binding.gyp's require('nan') resolves from node_modules/.
      rm -rf "$STAGE/epoll" && cp -r node_modules/epoll "$STAGE/epoll" && rm -rf "$STAGE/epoll/build"
      if [ "$arch" = "$host_arch" ]; then
        (cd "$STAGE/epoll" && node "$GYP" rebuild --nodedir="$nodedir" >"../epoll-build.log" 2>&1)
      elif [ "$arch" = arm64 ]; then
        command -v aarch64-linux-gnu-g++ >/dev/null || { echo "dist.sh: aarch64-linux-gnu-g++ missing (apt-get install g++-aarch64-linux-gnu)" >&2; exit 1; }
        (cd "$STAGE/epoll" && CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++ LINK=aarch64-linux-gnu-g++ AR=aarch64-linux-gnu-ar \
          node "$GYP" rebuild --arch=arm64 --nodedir="$nodedir" >"../epoll-build.log" 2>&1)
      else
        echo "dist.sh: cannot cross-build epoll for $arch" >&2; exit 1
      fi || { cat "$STAGE/epoll-build.log" >&2; echo "dist.sh: epoll build for Node $major ($arch) failed" >&2; exit 1; }
      mkdir -p "$(dirname "$cached")"
      cp "$STAGE/epoll/build/Release/epoll.node" "$cached.tmp.$$" && mv "$cached.tmp.$$" "$cached"
    fi
    cp "$cached" "$EPOLL_OUT/prebuilds/linux-$arch/node.abi$abi.node"
  done
done
cat > "$EPOLL_OUT/epoll.js" <<'EOF'
'use strict';
// Release tree (scripts/dist.sh): the addon is prebuilds/linux-<arch>/node.abi<N>.node, one per
// supported Node ABI; node-gyp-build loads the running Node's. Elsewhere than Linux, epoll's own stub.
module.exports = require('os').type() === 'Linux' ? require('node-gyp-build')(__dirname) : { Epoll: {} };
EOF

# Which native binaries the tree holds; a Pi needs the arm64 ones (ELF e_machine 183 = AArch64).
elf_machine() { node -e 'const b=require("fs").readFileSync(process.argv[1]); console.log(b.readUInt16LE(18))' "$1" 2>/dev/null; }
arm64=yes
if ls "$OUT"/node_modules/@serialport/bindings-cpp/prebuilds/linux-arm64/*glibc.node >/dev/null 2>&1; then
  echo "arm64: @serialport/bindings-cpp prebuild present"
else
  echo "arm64: @serialport/bindings-cpp prebuild MISSING"; arm64=no
fi
n=0
for f in "$EPOLL_OUT"/prebuilds/linux-*/node.abi*.node; do
  m=$(elf_machine "$f")
  echo "epoll: ${f#"$EPOLL_OUT/"} (ELF machine $m)"
  case $f in */linux-arm64/*) [ "$m" != 183 ] || n=$((n + 1)) ;; esac
done
if [ "$n" = "$(echo "$NODE_DIRS" | wc -l)" ]; then
  echo "arm64: epoll present for $n Node ABIs (cross-compiled)"
else
  echo "arm64: epoll MISSING ($n arm64 builds; DIST_ARCH=host builds only this machine's $(uname -m))"; arm64=no
fi
if [ "$arm64" = no ] && [ "${DIST_ARCH:-arm64}" = arm64 ]; then
  echo "dist.sh: arm64 natives missing" >&2; exit 1
fi

TAR=$(dirname "$OUT")/shadowgate-$VERSION.tar.gz
tar czf "$TAR" -C "$(dirname "$OUT")" "$(basename "$OUT")"
echo "dist: $OUT ($(du -sh "$OUT" | cut -f1)), $TAR ($(du -h "$TAR" | cut -f1))"
