#!/usr/bin/env bash
# Install the Debian tools that the tests and benchmarks use as independent cross-checks:
# tshark (RTP statistics, frame times, HTTP transactions), sox and ffmpeg (G.711 decoding, received
# audio), espeak-ng (the speech corpus of benchmarks/pesq_vs_itu.py); and those the scripts that
# make data/ need (data/*/make_samples.sh): tcpdump (captures), iperf3 (bulk TCP load), curl and
# wget (web clients), openssl (the HTTPS samples' certificate), sipp (data/voice's SIP calls;
# Debian package sip-tester), chromium (Debian's browser: the test of a fresh page load driven by
# Playwright, and data/web/browser's captures; never `playwright install`).
# Never fails the build: without root or apt-get, what needs a missing tool skips and says so.
set -u
want=(tshark sox ffmpeg espeak-ng tcpdump iperf3 curl wget openssl sipp:sip-tester chromium)   # command[:package]
missing=()
for t in "${want[@]}"; do command -v "${t%%:*}" >/dev/null 2>&1 || missing+=("${t#*:}"); done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "note: ${missing[*]} not installed and cannot apt-get here; tests needing it will skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
(apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}") >/tmp/qoe-apt.log 2>&1 \
  || echo "note: apt-get install ${missing[*]} failed (see /tmp/qoe-apt.log); tests needing them will skip" >&2
exit 0
