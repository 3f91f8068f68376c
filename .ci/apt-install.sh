#!/usr/bin/env bash
# Installs Debian packages (each argument is `name` or `name=version`) with apt-get, as root or
# through sudo. Callers check first whether what they need is there; this refreshes the package
# lists once per call. Another apt-get holding its locks is waited for (up to 10 minutes).
set -euo pipefail

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
apt=("${sudo[@]}" apt-get -q -o DPkg::Lock::Timeout=600)

# `DPkg::Lock::Timeout` covers dpkg's lock; the lists lock of `update` is retried here.
for attempt in $(seq 60); do
    if "${apt[@]}" update; then
        break
    fi
    [ "$attempt" -lt 60 ] || { echo "apt-install: apt-get update kept failing" >&2; exit 1; }
    echo "apt-install: apt-get update failed (lock held?); retrying in 10 s" >&2
    sleep 10
done
"${apt[@]}" install -y "$@"
