#!/bin/sh
# Make the WebRTC calls of this folder (README.md): as root, with the repository's venv
# (pip install -e '.[data]' gives Playwright; Debian's chromium, tcpdump, iperf3, ffmpeg).
#   data/video/webrtc/make_calls.sh                 # every call, about 20 s each
#   data/video/webrtc/make_calls.sh vp8-loss        # some calls again
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
py=${PYTHON:-$repo/.venv/bin/python}
exec "$py" "$here/make_calls.py" "$@"
