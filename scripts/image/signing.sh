# shellcheck shell=sh
# Sourced by scripts/build-image.sh and scripts/build-bundle.sh: sets SIGN_KEY and SIGN_CERT, the key pair
# that signs update bundles (the image trusts SIGN_CERT as its RAUC keyring). Production builds name
# their own pair with SHADOWGATE_SIGNING_KEY and SHADOWGATE_SIGNING_CERT (both PEM files, kept outside the
# repository); without them a development pair is made once under build/keys/ (git-ignored), good for
# tests only: a card built with it accepts any bundle signed on this build machine.
if [ -n "${SHADOWGATE_SIGNING_KEY:-}${SHADOWGATE_SIGNING_CERT:-}" ]; then
  SIGN_KEY=${SHADOWGATE_SIGNING_KEY:?SHADOWGATE_SIGNING_CERT is set but SHADOWGATE_SIGNING_KEY is not}
  SIGN_CERT=${SHADOWGATE_SIGNING_CERT:?SHADOWGATE_SIGNING_KEY is set but SHADOWGATE_SIGNING_CERT is not}
  if [ ! -r "$SIGN_KEY" ] || [ ! -r "$SIGN_CERT" ]; then echo "signing: cannot read $SIGN_KEY or $SIGN_CERT" >&2; exit 1; fi
else
  SIGN_KEY=$PWD/build/keys/development.key.pem
  SIGN_CERT=$PWD/build/keys/development.cert.pem
  if [ ! -f "$SIGN_KEY" ] || [ ! -f "$SIGN_CERT" ]; then
    mkdir -p build/keys && chmod 0700 build/keys
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
      -subj "/O=shadowgate/CN=shadowgate development update signing (tests only)" \
      -keyout "$SIGN_KEY.tmp" -out "$SIGN_CERT.tmp" 2>/dev/null || { echo "signing: openssl failed" >&2; exit 1; }
    mv "$SIGN_KEY.tmp" "$SIGN_KEY" && mv "$SIGN_CERT.tmp" "$SIGN_CERT"
    echo "signing: made a development key pair in build/keys/ (tests only; see docs/deploy.md for production)" >&2
  fi
fi
