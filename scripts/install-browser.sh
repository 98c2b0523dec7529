#!/bin/sh
# Install Debian's chromium for the browser tests (tests/test_browser.py), unless it is already there.
# Playwright drives it through `executable_path="/usr/bin/chromium"`; Playwright's own browser download
# is never used. Needs root (or sudo) and the distribution's package mirrors.
set -eu
if [ -x /usr/bin/chromium ]; then
    echo "chromium already installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
    exit 0
fi
sh "$(dirname "$0")/apt-install.sh" chromium
/usr/bin/chromium --version
