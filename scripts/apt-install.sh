#!/bin/sh
# Install Debian packages by name: `sh scripts/apt-install.sh chromium`. Shared by install-browser.sh and
# install-ocr.sh, which each decide first whether anything is missing. Needs root (or sudo) and the
# distribution's package mirrors.
set -eu
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends "$@"
