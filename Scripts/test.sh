#!/usr/bin/env bash
# Installs libssl-dev if missing, starts the real test servers (installing nginx and tuspyserver
# if missing), then runs the whole test suite; extra arguments go to `swift test`. Exits with
# swift test's status.
set -euo pipefail
cd "$(dirname "$0")/.."
# The build links the system's OpenSSL 3 (Sources/CBlobStreamTLS): its headers come with libssl-dev.
if [[ ! -f /usr/include/openssl/ssl.h ]]; then
    echo "test.sh: installing libssl-dev (the build links OpenSSL 3)" >&2
    if [[ "$(id -u)" == 0 ]]; then
        { apt-get install -y libssl-dev || { apt-get update && apt-get install -y libssl-dev; }; } >&2
    else
        echo "test.sh: run as root, or: sudo apt-get install libssl-dev" >&2
        exit 1
    fi
fi
Scripts/test-servers.sh up
exec swift test "$@"
