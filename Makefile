# The two commands a user needs: `make run` and `make test`. Both install what is missing first.
SHELL := /bin/bash
NODE_MODULES_STAMP := node_modules/.package-lock.json
APT_PACKAGES := socat python3-pymodbus python3-requests mbpoll mosquitto-clients mosquitto systemd shellcheck g++-aarch64-linux-gnu chromium prometheus iproute2 strace
# What `make dist` itself needs: a cross compiler for the Pi's arm64 epoll, unless this machine is arm64 (no test peers).
DIST_PACKAGES := $(if $(filter aarch64 arm64,$(shell uname -m)),,g++-aarch64-linux-gnu)

.PHONY: run build test lint bench install deps system-deps dist-deps apt-install node-versions clean dist image image-test reliability bundle

run: build
	./dist/main.js run --config board/demo.json

build: deps dist/.stamp

# src/config/schema-validators.js is schema.json precompiled by ajv (committed: tests run from src/); rewritten
# here only when schema.json, ajv or the generator changed. tsc does not copy .js, so it is copied like schema.json.
dist/.stamp: $(shell find src -type f) tsconfig.json tsconfig.build.json package.json scripts/gen-validator.ts scripts/build-console.mjs
	node --import tsx scripts/gen-validator.ts
	npx tsc -p tsconfig.build.json
	cp src/config/schema.json dist/config/schema.json
	cp src/config/schema-validators.js dist/config/schema-validators.js
	node scripts/build-console.mjs
	chmod +x dist/main.js
	touch $@

# The fast tier (README "Two tiers"), parts side by side (scripts/test.mjs): the type check, the uvu suite in two
# processes, the unit tests again on the other supported Node.js releases, the SD image built and booted under
# qemu (quick tier of scripts/image-test.sh) and the long checks; each part's time and what is left to
# `make reliability` are printed at the end.
test: system-deps build node-versions
	node scripts/test.mjs

# The release tree for a Pi: one esbuild bundle plus only the native modules (build/shadowgate/),
# epoll built for Node 20, 22 and 24, cross-compiled for arm64 and for this machine.
dist: dist-deps build node-versions
	sh scripts/dist.sh

# The flashable SD image build/shadowgate-<version>-arm64.img.zst (root; Debian packages only).
image: build node-versions
	sh scripts/image/host-deps.sh
	sh scripts/dist.sh
	bash scripts/build-image.sh

# A signed update bundle build/shadowgate-<version>-arm64.raucb of the root that `make image` built last
# (root; the signing key from SHADOWGATE_SIGNING_KEY/_CERT, else a development pair in build/keys/).
bundle:
	sh scripts/image/host-deps.sh
	bash scripts/build-bundle.sh

# Builds the image and boots it under qemu (about 15 minutes cold on 2 cores).
image-test: build
	bash scripts/image-test.sh

# The long tier: the field campaign (kills, disk full, bus faults, bad input, auth and a 10-minute soak,
# SOAK=1h for an hour) against the real gateway process, one table in build/reliability.md, exit 1 on any
# miss; then the SD image's full tier: its own reboot on a broken config, refused bundles, rollback by hand,
# the broken bundle's fallback, 10 real power cuts at random moments inside the VM and the restore from the
# card. `make test` runs the reduced campaigns (test/reliability/) and the image's quick tier (one power cut).
reliability: system-deps build
	node --import tsx scripts/reliability/run.ts
	SHADOWGATE_IMAGE_TIER=full SHADOWGATE_IMAGE_CUTS=10 bash scripts/image-test.sh

lint: deps
	npx tsc -p tsconfig.json --noEmit
	npx tsc -p tsconfig.console.json --noEmit

bench: dist
	node --import tsx scripts/bench/run.ts

install: deps system-deps

deps: $(NODE_MODULES_STAMP)

$(NODE_MODULES_STAMP): package.json package-lock.json
	npm ci --no-fund --no-audit
	touch $@

# Node.js 20, 22 and 24 as exact official binaries from the npm registry (pinned in scripts/node-versions.mjs),
# unpacked once into a cache outside the checkout (~/.cache/shadowgate/node, or SHADOWGATE_CACHE): the unit tests
# run on each, and dist.sh builds onoff's epoll against each.
node-versions:
	@node scripts/node-versions.mjs >/dev/null

# Test peers (socat pty pairs, an independent pymodbus slave, mosquitto clients) come from Debian.
# Installed only when missing, and only where we can (root with apt-get); tests that need them
# report skipped with the reason otherwise.
system-deps:
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(APT_PACKAGES)"

dist-deps:
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(DIST_PACKAGES)"

apt-install:
	@missing=""; for p in $(PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing:$$missing"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) || echo "warning: could not install$$missing"; \
	  else echo "warning: missing Debian packages:$$missing (tests needing them are skipped)"; fi; \
	fi

clean:
	rm -rf dist
