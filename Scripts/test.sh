#!/usr/bin/env bash
# Starts the real test servers (installing nginx and tuspyserver if missing), then runs the
# whole test suite; extra arguments go to `swift test`. Exits with swift test's status.
set -euo pipefail
cd "$(dirname "$0")/.."
Scripts/test-servers.sh up
exec swift test "$@"
