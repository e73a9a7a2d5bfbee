#!/usr/bin/env bash
# Lints openapi.yaml, the HTTP contract, with Redocly CLI (rules: redocly.yaml). .ci/run calls it before the build.
# Needs Node.js 20+ with npx; the CLI comes from the npm registry at a pinned version. Fails on any lint error,
# and fails (never skips) when npx is missing.
set -euo pipefail
cd "$(dirname "$0")"

REDOCLY_CLI_VERSION=2.77.0

if ! command -v npx >/dev/null 2>&1; then
  echo "openapi-lint: npx not found: install Node.js 20+ with npm (Debian: apt-get install nodejs npm)," \
       "then run ./openapi-lint.sh again. openapi.yaml was NOT linted." >&2
  exit 1
fi

# No telemetry and no update notice: CI output stays about the contract.
export REDOCLY_TELEMETRY=off
export REDOCLY_SUPPRESS_UPDATE_NOTICE=true
echo "openapi-lint: @redocly/cli@${REDOCLY_CLI_VERSION} lint openapi.yaml"
npx --yes "@redocly/cli@${REDOCLY_CLI_VERSION}" lint --config redocly.yaml openapi.yaml
