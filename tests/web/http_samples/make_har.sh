#!/usr/bin/env bash
# Makes mitmproxy.har: a HAR written by an independent tool (mitmproxy's hardump) for
# the HAR import tests. curl fetches three objects of Python's http.server through
# mitmdump as an HTTP proxy, on a private loopback. mitmproxy is not a qoe dependency:
#   python3 -m venv /tmp/mitmvenv && /tmp/mitmvenv/bin/pip install mitmproxy
#   MITMDUMP=/tmp/mitmvenv/bin/mitmdump ./make_har.sh
set -euo pipefail
if [ -z "${QOE_IN_NETNS:-}" ]; then exec env QOE_IN_NETNS=1 unshare -n "$0" "$@"; fi
ip link set lo up
here=$(cd "$(dirname "$0")" && pwd)
MITMDUMP=${MITMDUMP:-mitmdump}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir "$work/www" && cd "$work/www"
printf '<html><link rel=stylesheet href=style.css><img src=img.bin></html>\n' > index.html
printf 'p { color: #333; }\n%.0s' $(seq 60) > style.css
head -c 20000 /dev/zero > img.bin
python3 "$here/server.py" 8080 &
"$MITMDUMP" -q --listen-host 127.0.0.1 -p 8090 --set hardump="$here/mitmproxy.har" &
MITM=$!
sleep 4
curl -s -x http://127.0.0.1:8090 -o /dev/null -o /dev/null -o /dev/null \
    http://127.0.0.1:8080/index.html http://127.0.0.1:8080/style.css http://127.0.0.1:8080/img.bin
sleep 1
kill -INT $MITM; wait $MITM || true
"$MITMDUMP" --version | head -1 > "$here/mitmproxy.version.txt"
