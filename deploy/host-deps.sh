#!/usr/bin/env bash
# Installs the Debian packages the host needs: debootstrap for the offline role-image build,
# chromium for the web console's browser tests (driven by Playwright through executable_path).
# A no-op when they are already present; needs root (as on CI) otherwise.
set -euo pipefail
need=()
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "missing host packages: ${need[*]} (install them as root)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
