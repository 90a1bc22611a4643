#!/usr/bin/env bash
# Makes the loopback captures tests/web/test_http*.py read (run as root: tcpdump on lo).
#   cd tests/web/http_samples && ./make_samples.sh
# Servers: server.py (Python's http.server, HTTP/1.0 or HTTP/1.1, plain or TLS).
# Clients: curl (the version on the machine that made them is in versions.txt), and a raw
# Python socket for pipelining (curl no longer pipelines).
set -euo pipefail
# a private network namespace: its own loopback, no other traffic in the captures
if [ -z "${QOE_IN_NETNS:-}" ]; then exec env QOE_IN_NETNS=1 unshare -n "$0" "$@"; fi
ip link set lo up
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
mkdir www
python3 - <<'PY'
import random
random.seed(1030)
open("www/index.html", "w").write("<html><head><link rel=stylesheet href=style.css></head><body>"
                                  + "<p>qoe test page</p>" * 100 + "<img src=img.bin></body></html>\n")
open("www/style.css", "w").write("p { color: #333; }\n" * 60)
open("www/img.bin", "wb").write(bytes(random.getrandbits(8) for _ in range(20000)))
for n in "abc":
    open(f"www/{n}.txt", "w").write(f"object {n}\n" * (200 * (ord(n) - 96)))
open("upload.bin", "wb").write(b"u" * 5000)
PY
openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 3650 \
    -subj "/CN=www.example.test" 2>/dev/null

capture() {  # capture NAME PORT: start tcpdump on lo for PORT, writing NAME.pcap
    tcpdump -i lo -s 0 -U --immediate-mode -Z root -w "$here/$1.pcap" "tcp port $2" 2>>"$work/tcpdump.log" &
    TCPDUMP=$!
    sleep 1
}
stop() {
    sleep 1
    kill "$TCPDUMP"; wait "$TCPDUMP" 2>/dev/null || true
}
serve() {  # serve PORT ARGS...: start server.py in www/
    (cd www && exec python3 "$here/server.py" "$@") &
    SERVER=$!
    sleep 1
}
C="curl -s -o /dev/null"

# HTTP/1.0 server (a connection per request): GET, HEAD, conditional GET -> 304, close-delimited body
serve 8080 --http10
capture http10 8080
$C http://127.0.0.1:8080/index.html
$C -I http://127.0.0.1:8080/index.html
$C -z "$(date -u -d '+1 day' '+%a, %d %b %Y %H:%M:%S GMT')" http://127.0.0.1:8080/style.css
$C http://127.0.0.1:8080/close
stop; kill $SERVER

# HTTP/1.1 server
serve 8080
capture keepalive 8080   # three requests on one persistent connection
$C -o /dev/null -o /dev/null http://127.0.0.1:8080/a.txt http://127.0.0.1:8080/b.txt http://127.0.0.1:8080/c.txt
stop
capture framing 8080     # chunked (extension + trailer), 204, close-delimited, on one connection
$C -o /dev/null -o /dev/null http://127.0.0.1:8080/chunked http://127.0.0.1:8080/nocontent http://127.0.0.1:8080/close
stop
capture continue 8080    # POST with Expect: 100-continue
$C -H "Expect: 100-continue" --data-binary @upload.bin http://127.0.0.1:8080/upload
stop
capture pipelined 8080   # three requests written at once before any response
python3 - <<'PY'
import socket
s = socket.create_connection(("127.0.0.1", 8080))
req = b"GET /%s HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n%s\r\n"
s.sendall(req % (b"a.txt", b"") + req % (b"style.css", b"") + req % (b"b.txt", b"Connection: close\r\n"))
while s.recv(65536):
    pass
s.close()
PY
stop; kill $SERVER

# HTTPS (self-signed, curl -k), SNI www.example.test, TLS 1.3 then TLS 1.2
serve 8443 --tls "$work/cert.pem" "$work/key.pem"
R="--resolve www.example.test:8443:127.0.0.1 -k"
capture tls13 8443
$C -o /dev/null $R https://www.example.test:8443/index.html https://www.example.test:8443/style.css
stop
capture tls12 8443
$C $R --tlsv1.2 --tls-max 1.2 https://www.example.test:8443/index.html
stop; kill $SERVER

{ curl --version | head -1; python3 --version; openssl version; tcpdump --version 2>&1 | head -1; } > "$here/versions.txt"
ls -l "$here"/*.pcap; cat "$work/tcpdump.log"
