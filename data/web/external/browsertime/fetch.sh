#!/usr/bin/env bash
# Fetch four HAR files browsertime made of real page loads (sitespeed.io's own pages, March 2016:
# Chrome 49 through browsertime's Chrome HAR conversion, Firefox 45's HAR export; HTTP/2 and
# HTTP/1.1), from browsertime's test data at the commit they were taken from, and its licence
# (Apache-2.0, kept beside them). The oracle of tests/web/test_external_hars.py is each file's
# own JSON: its pages' pageTimings and entries.
# Usage: data/web/external/browsertime/fetch.sh     Needs: curl.
# (The files here were copied from a clone of https://github.com/sitespeedio/browsertime at this
# commit, byte for byte, with `git show COMMIT:PATH`.)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
COMMIT=d68261e554470f7b9df28797502f5edac3ace2e3
BASE="https://raw.githubusercontent.com/sitespeedio/browsertime/$COMMIT"
for browser in chrome firefox; do
  for name in h2-har-with-diskcache har-with-diskcache; do
    curl -fsSL "$BASE/test/testdata/${browser}har/$name.har" -o "$HERE/$browser-$name.har"
  done
done
curl -fsSL "$BASE/LICENSE" -o "$HERE/LICENSE"
