#!/usr/bin/env bash
# Install the Debian tools that the test suite uses as independent cross-checks.
# Never fails the build: without root or apt-get, the tests that need a tool skip.
set -u
want=(tshark)
missing=()
for t in "${want[@]}"; do command -v "$t" >/dev/null 2>&1 || missing+=("$t"); done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "note: ${missing[*]} not installed and cannot apt-get here; tests needing it will skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
(apt-get update -qq && apt-get install -y -qq --no-install-recommends tshark) >/tmp/qoe-apt.log 2>&1 \
  || echo "note: apt-get install tshark failed (see /tmp/qoe-apt.log); tests needing it will skip" >&2
exit 0
