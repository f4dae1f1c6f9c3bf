#!/usr/bin/env bash
# Install the Debian packages listed in scripts/apt-packages.txt that are not installed yet.
# Idempotent and fast when nothing is missing (one dpkg-query, no apt-get update).
# Not root: prints what is missing and carries on (the build may still work).
set -euo pipefail
cd "$(dirname "$0")/.."

list=scripts/apt-packages.txt
[ -f "$list" ] || { echo "install-deps: no $list, nothing to install"; exit 0; }

# Package names: drop comments and blank lines.
mapfile -t wanted < <(sed -e 's/#.*//' -e 's/[[:space:]]\+//g' "$list" | grep -v '^$' || true)
[ "${#wanted[@]}" -gt 0 ] || { echo "install-deps: $list lists no packages"; exit 0; }

missing=()
for pkg in "${wanted[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$pkg")
done

if [ "${#missing[@]}" -eq 0 ]; then
    echo "install-deps: all ${#wanted[@]} apt packages present"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: not root, skipping apt; missing: ${missing[*]}" >&2
    echo "install-deps: as root run: apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
