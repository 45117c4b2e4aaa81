#!/usr/bin/env bash
# The OpenAPI document through other people's tools, after the tests (.ci/run calls this):
#
#   1. `openapi-spec-validator` validates it against the OpenAPI 3.1 specification;
#   2. Redocly CLI lints it (`redocly.yaml`: the recommended rules, warnings as errors);
#   3. `openapi-python-client` generates a Python client from it, and
#      `tests/clients/python/scenario.py` drives a live `voiceplane serve` (debug build, a
#      throwaway SQLite database and storage folder, an organization and key from
#      `voiceplane bootstrap`) through that client's functions;
#   4. `openapi-typescript` generates TypeScript types from it, and `tsc --strict` compiles
#      `tests/clients/typescript/check.ts` against them (request bodies that leave out what
#      the server defaults; answers with what the API promises).
#
# The document is written by `voiceplane openapi` (no server needed). The Python tools live
# in a virtualenv and Redocly in an npm prefix, both under "$CI_CACHE" and keyed by their
# pinned versions; each is made once (its stamp file is written last, so a half-made one is
# made again) and reused afterwards. Every step prints its wall time.
set -euo pipefail
cd "$(dirname "$0")/.."

CI_CACHE="${VOICEPLANE_CI_CACHE:-$HOME/.cache/voiceplane-ci}"
OPENAPI_SPEC_VALIDATOR_VERSION=0.9.0
OPENAPI_PYTHON_CLIENT_VERSION=0.29.1
REDOCLY_VERSION=2.77.0
# openapi-typescript 7.13 needs TypeScript 5.9 (7.x breaks it).
OPENAPI_TYPESCRIPT_VERSION=7.13.0
TYPESCRIPT_VERSION=5.9.3
PY_ENV="$CI_CACHE/openapi-python-$OPENAPI_SPEC_VALIDATOR_VERSION-$OPENAPI_PYTHON_CLIENT_VERSION"
NPM_PREFIX="$CI_CACHE/redocly-cli-$REDOCLY_VERSION"
TS_PREFIX="$CI_CACHE/openapi-typescript-$OPENAPI_TYPESCRIPT_VERSION-typescript-$TYPESCRIPT_VERSION"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/voiceplane-ci-openapi.XXXXXX")"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# Runs "$@" as the step named $1... and prints how long it took.
step() {
  local name="$1"
  shift
  local started=$SECONDS
  echo "ci: openapi: $name"
  "$@"
  echo "ci: openapi: $name took $((SECONDS - started)) s"
}

python_tools() {
  if [ ! -f "$PY_ENV/.complete" ]; then
    echo "ci: installing openapi-spec-validator $OPENAPI_SPEC_VALIDATOR_VERSION and openapi-python-client $OPENAPI_PYTHON_CLIENT_VERSION into $PY_ENV"
    rm -rf "$PY_ENV"
    python3 -m venv "$PY_ENV"
    "$PY_ENV/bin/pip" install --quiet --disable-pip-version-check \
      "openapi-spec-validator==$OPENAPI_SPEC_VALIDATOR_VERSION" \
      "openapi-python-client==$OPENAPI_PYTHON_CLIENT_VERSION"
    touch "$PY_ENV/.complete"
  fi
}

redocly_tool() {
  if [ ! -f "$NPM_PREFIX/.complete" ]; then
    echo "ci: installing @redocly/cli $REDOCLY_VERSION into $NPM_PREFIX"
    rm -rf "$NPM_PREFIX"
    npm install --prefix "$NPM_PREFIX" --no-audit --no-fund --loglevel=error \
      "@redocly/cli@$REDOCLY_VERSION"
    touch "$NPM_PREFIX/.complete"
  fi
}

typescript_tools() {
  if [ ! -f "$TS_PREFIX/.complete" ]; then
    echo "ci: installing openapi-typescript $OPENAPI_TYPESCRIPT_VERSION and typescript $TYPESCRIPT_VERSION into $TS_PREFIX"
    rm -rf "$TS_PREFIX"
    npm install --prefix "$TS_PREFIX" --no-audit --no-fund --loglevel=error \
      "openapi-typescript@$OPENAPI_TYPESCRIPT_VERSION" "typescript@$TYPESCRIPT_VERSION"
    touch "$TS_PREFIX/.complete"
  fi
}

# The binary the tests built, or built now when run on its own. The same command as the
# tests' build, so that it is a no-op after them: `cargo build -p voiceplane` would resolve
# features without the workspace's dev-dependencies and rebuild half the tree.
binary() {
  cargo test --workspace --no-run --quiet
  BIN="$(cd "${CARGO_TARGET_DIR:-target}/debug" && pwd)/voiceplane"
  "$BIN" openapi >"$WORK/openapi.json"
}

validate() {
  "$PY_ENV/bin/openapi-spec-validator" "$WORK/openapi.json"
}

lint() {
  # Redocly's notices (Node versions, telemetry) are not the lint's business.
  REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
    "$NPM_PREFIX/node_modules/.bin/redocly" lint --config redocly.yaml \
    --format stylish "$WORK/openapi.json"
}

generate() {
  # Its formatter (ruff, one of its dependencies) runs from the virtualenv's PATH.
  PATH="$PY_ENV/bin:$PATH" "$PY_ENV/bin/openapi-python-client" generate \
    --path "$WORK/openapi.json" --meta none --config tests/clients/python/generator.yaml \
    --output-path "$WORK/python/voiceplane_client" >"$WORK/generate.log" 2>&1 || {
    cat "$WORK/generate.log" >&2
    return 1
  }
  # It warns about the operations it cannot represent. Those known are the audio bodies and
  # answers (it has no reader for audio media types; the raw bytes stay reachable through
  # the response's `content`) and the CSV form of a campaign's recipients (the client sends
  # their JSON form); anything else means the document says something it cannot read, and
  # fails the step.
  local unexpected
  unexpected=$(grep -A2 '^WARNING' "$WORK/generate.log" | grep -v '^WARNING\|^--\|^$' |
    grep -v 'ontent[ _]type audio/\|ontent[ _]type text/csv' || true)
  if [ -n "$unexpected" ]; then
    cat "$WORK/generate.log" >&2
    echo "ci: openapi-python-client warned about more than the audio and CSV bodies:" >&2
    echo "$unexpected" >&2
    return 1
  fi
}

serve_and_drive() {
  local dir="$WORK/server"
  mkdir -p "$dir"
  # The embedded default (SQLite and the fs store in the working folder), with a clean
  # environment: the suite's VOICEPLANE_TEST_* variables are not the server's settings.
  local clean=(env -i "PATH=$PATH" "HOME=$HOME" RUST_LOG=info NO_COLOR=1)
  (cd "$dir" && "${clean[@]}" "$BIN" bootstrap --org-name CI --admin-email ci@example.com \
    >"$dir/bootstrap.json" 2>"$dir/bootstrap.log") || {
    cat "$dir/bootstrap.log" >&2
    return 1
  }
  # `exec`, so that the id below is the server's own and stopping it stops the server.
  (cd "$dir" && exec "${clean[@]}" VOICEPLANE_LISTEN=127.0.0.1:0 "$BIN" serve \
    >"$dir/serve.log" 2>&1) &
  SERVER_PID=$!
  local url="" deadline=$((SECONDS + 60))
  while [ -z "$url" ]; do
    url=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$dir/serve.log" | head -n1 |
      sed 's/listening on //' || true)
    if [ -z "$url" ]; then
      if ! kill -0 "$SERVER_PID" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
        echo "ci: voiceplane serve did not start" >&2
        cat "$dir/serve.log" >&2
        return 1
      fi
      sleep 0.2
    fi
  done
  field() { "$PY_ENV/bin/python" -c "import json,sys; print(json.load(sys.stdin)['$1'])" \
    <"$dir/bootstrap.json"; }
  VOICEPLANE_URL="$url" VOICEPLANE_ORG="$(field organization_id)" \
    VOICEPLANE_KEY="$(field api_key)" PYTHONPATH="$WORK/python" \
    "$PY_ENV/bin/python" tests/clients/python/scenario.py || {
    echo "ci: the server's log:" >&2
    tail -n 50 "$dir/serve.log" >&2
    return 1
  }
}

typescript_types() {
  mkdir -p "$WORK/typescript"
  "$TS_PREFIX/node_modules/.bin/openapi-typescript" "$WORK/openapi.json" \
    --output "$WORK/typescript/api.ts" >"$WORK/typescript.log" 2>&1 || {
    cat "$WORK/typescript.log" >&2
    return 1
  }
  cp tests/clients/typescript/check.ts "$WORK/typescript/"
  "$TS_PREFIX/node_modules/.bin/tsc" --noEmit --strict --target es2022 --module esnext \
    --moduleResolution bundler "$WORK/typescript/check.ts"
}

started=$SECONDS
step "install the Python tools (cached)" python_tools
step "install Redocly CLI (cached)" redocly_tool
step "install openapi-typescript and TypeScript (cached)" typescript_tools
step "write the document (voiceplane openapi)" binary
step "openapi-spec-validator $OPENAPI_SPEC_VALIDATOR_VERSION" validate
step "redocly lint ($REDOCLY_VERSION)" lint
step "openapi-python-client $OPENAPI_PYTHON_CLIENT_VERSION generate" generate
step "Python client scenario against voiceplane serve" serve_and_drive
step "openapi-typescript $OPENAPI_TYPESCRIPT_VERSION types under tsc --strict" typescript_types
echo "ci: openapi: all steps took $((SECONDS - started)) s"
