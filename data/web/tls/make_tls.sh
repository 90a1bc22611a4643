#!/usr/bin/env bash
# Make the decryption samples in data/web/tls/: Debian's curl (7.88, OpenSSL 3.0, nghttp2) fetching
# the seed paper's page (data/web/site/) from Debian's nginx (1.22) over HTTPS, in one network
# namespace of its own (loopback only), captured by tcpdump; curl writes the NSS key log
# (SSLKEYLOGFILE). One capture per case:
#   tls12-h1-aesgcm    TLS 1.2, ECDHE-RSA-AES128-GCM-SHA256, HTTP/1.1 keep-alive (4 objects + a 404)
#   tls12-h2-chacha    TLS 1.2, ECDHE-RSA-CHACHA20-POLY1305, HTTP/2, the objects in parallel streams
#   tls13-h1-aes256    TLS 1.3, TLS_AES_256_GCM_SHA384, HTTP/1.1; then (--next: curl's defaults again) a
#                      HEAD over HTTP/2 on a second connection
#   tls13-h2-aes128    TLS 1.3, TLS_AES_128_GCM_SHA256, HTTP/2 parallel streams (and a 404)
#   tls13-h2-chacha    TLS 1.3, TLS_CHACHA20_POLY1305_SHA256, HTTP/2
#   tls13-h2-goaway    TLS 1.3, HTTP/2 to a server that ends a connection after 2 requests (GOAWAY):
#                      curl retries the rest on a second connection
#   h2c-prior          HTTP/2 in clear with prior knowledge (no TLS; the preface, RFC 9113 §3.3)
#   tls13-keyupdate    TLS 1.3 via `openssl s_client` (HTTP/1.1 by hand), a KeyUpdate ("K" command:
#                      update_requested, so both sides change keys) between two requests (commands need
#                      s_client without -quiet/-ign_eof; it quits at the end of its input)
#   tls13-h2-dsb       tls13-h2-aes128 with its key log inside the pcapng (editcap --inject-secrets:
#                      a Decryption Secrets Block)
# and, with `cbc` (those alone), TLS 1.2 CBC suites:
#   tls12-h1-cbc        ECDHE-RSA-AES128-SHA (AES-128-CBC, HMAC-SHA1), HTTP/1.1 keep-alive; OpenSSL
#                       negotiates encrypt_then_mac (RFC 7366)
#   tls12-h2-cbc384     ECDHE-RSA-AES256-SHA384 (AES-256-CBC, HMAC-SHA384, PRF SHA-384), HTTP/2, EtM
#   tls12-h1-cbc-noetm  ECDHE-RSA-AES256-SHA via `openssl s_client -no_etm` (HTTP/1.1 by hand):
#                       MAC-then-encrypt (RFC 5246 §6.2.3.2)
# Then what tshark 4.0 decrypts from each (the oracle of the tests): *.tshark-http*.tsv.
# Usage (as root): data/web/tls/make_tls.sh [all|cbc]   Needs: nginx curl openssl tcpdump tshark editcap.
# The namespace is deleted on exit. Captures are not bit-exact reproducible (keys, timing).
set -euo pipefail
export LC_ALL=C TZ=UTC
HERE=$(cd "$(dirname "$0")" && pwd)
WHAT=${1:-all}
SITE=$(cd "$HERE/../site" && pwd)
WORK=$(mktemp -d /tmp/wx-tls.XXXXXX)
NS=wxtls$$
cleanup() {
  [ -f "$WORK/nginx.pid" ] && ip netns exec $NS kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
  ip netns del $NS 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
ip netns add $NS
ip -n $NS link set lo up mtu 1500  # Ethernet-size packets: 64 KiB loopback packets made tcpdump drop some

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -days 30 \
  -subj /CN=www.example.com -addext subjectAltName=DNS:www.example.com 2>/dev/null
cat >"$WORK/nginx.conf" <<CONF
daemon on; pid $WORK/nginx.pid; error_log $WORK/error.log; worker_processes 1;
events { worker_connections 64; }
http {
  access_log off; types { text/html html; text/css css; image/jpeg jpg; }
  client_body_temp_path $WORK; proxy_temp_path $WORK; fastcgi_temp_path $WORK; uwsgi_temp_path $WORK; scgi_temp_path $WORK;
  server {
    listen 127.0.0.1:443 ssl http2; server_name www.example.com; root $SITE;
    ssl_certificate $WORK/cert.pem; ssl_certificate_key $WORK/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3; ssl_prefer_server_ciphers off;
    ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-SHA:ECDHE-RSA-AES256-SHA:ECDHE-RSA-AES256-SHA384;
    ssl_session_tickets off;
  }
  server {  # the same, but a connection ends after 2 requests: HTTP/2 GOAWAY (nginx keepalive_requests)
    listen 127.0.0.1:8443 ssl http2; server_name www.example.com; root $SITE;
    ssl_certificate $WORK/cert.pem; ssl_certificate_key $WORK/key.pem; ssl_session_tickets off;
    ssl_protocols TLSv1.2 TLSv1.3; keepalive_requests 2;
  }
  server {  # HTTP/2 in clear with prior knowledge (h2c, RFC 9113 §3.3)
    listen 127.0.0.1:80 http2; server_name www.example.com; root $SITE;
  }
}
CONF
ip netns exec $NS nginx -c "$WORK/nginx.conf"
sleep 0.5

URLS=(https://www.example.com/index.html https://www.example.com/style.css https://www.example.com/img1.jpg
      https://www.example.com/img2.jpg https://www.example.com/missing.png)
CURL=(curl -sS -k --resolve www.example.com:443:127.0.0.1 -o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null
      -w '%{url_effective}\t%{http_code}\t%{http_version}\t%{size_download}\t%{time_appconnect}\t%{time_starttransfer}\t%{time_total}\n')

MADE=()
capture() {  # name, command...
  local name=$1; shift
  MADE+=("$name")
  rm -f "$HERE/$name.keylog"
  ip netns exec $NS tcpdump -i lo -s 0 -B 32768 --immediate-mode -w "$WORK/$name.pcap" tcp port 443 or tcp port 8443 or tcp port 80 2>"$WORK/$name.tcpdump.log" &
  local tpid=$!
  sleep 1
  SSLKEYLOGFILE=$HERE/$name.keylog ip netns exec $NS "$@" >"$HERE/$name.curl-w.tsv" || true
  sleep 1
  kill $tpid; wait $tpid 2>/dev/null || true
  grep -h "dropped by kernel" "$WORK/$name.tcpdump.log" | sed "s/^/$name: /" >&2
  # pcapng (the format that can carry a Decryption Secrets Block)
  editcap -F pcapng "$WORK/$name.pcap" "$HERE/$name.pcapng"
}

if [ "$WHAT" = all ]; then
capture tls12-h1-aesgcm "${CURL[@]}" --http1.1 --tlsv1.2 --tls-max 1.2 --ciphers ECDHE-RSA-AES128-GCM-SHA256 "${URLS[@]}"
capture tls12-h2-chacha "${CURL[@]}" --http2 --parallel --tlsv1.2 --tls-max 1.2 --ciphers ECDHE-RSA-CHACHA20-POLY1305 "${URLS[@]}"
capture tls13-h1-aes256 "${CURL[@]}" --http1.1 --tlsv1.3 --tls13-ciphers TLS_AES_256_GCM_SHA384 "${URLS[@]:0:4}" \
  --next -sS -k --resolve www.example.com:443:127.0.0.1 -I -o /dev/null -w '%{url_effective}\t%{http_code}\t%{http_version}\t%{size_download}\t%{time_appconnect}\t%{time_starttransfer}\t%{time_total}\n' "${URLS[0]}"
capture tls13-h2-aes128 "${CURL[@]}" --http2 --parallel --tlsv1.3 --tls13-ciphers TLS_AES_128_GCM_SHA256 "${URLS[@]}"
capture tls13-h2-chacha "${CURL[@]}" --http2 --tlsv1.3 --tls13-ciphers TLS_CHACHA20_POLY1305_SHA256 "${URLS[@]:0:2}"
# GOAWAY after 2 requests: curl opens a second connection for the rest
URLS8=("${URLS[@]/www.example.com/www.example.com:8443}")
capture tls13-h2-goaway "${CURL[@]/443:127.0.0.1/8443:127.0.0.1}" --http2 --parallel --tlsv1.3 "${URLS8[@]}"
# h2c with prior knowledge: no TLS at all (the dispatcher recognises the preface)
capture h2c-prior "${CURL[@]/443:127.0.0.1/80:127.0.0.1}" --http2-prior-knowledge --parallel "${URLS[@]/https:/http:}"
# KeyUpdate: s_client reads "K" on a line of its own as "send a KeyUpdate requesting one back"
capture tls13-keyupdate bash -c 'req="GET /style.css HTTP/1.1\r\nHost: www.example.com\r\n\r\n";
  { printf "$req"; sleep 0.5; printf "K\n"; sleep 0.5; printf "GET /index.html HTTP/1.1\r\nHost: www.example.com\r\nConnection: close\r\n\r\n"; sleep 1; } |
  openssl s_client -connect 127.0.0.1:443 -servername www.example.com -tls1_3 -keylogfile "$SSLKEYLOGFILE" 2>/dev/null | wc -c'
# the key log inside the capture: a pcapng Decryption Secrets Block
editcap --inject-secrets "tls,$HERE/tls13-h2-aes128.keylog" "$HERE/tls13-h2-aes128.pcapng" "$HERE/tls13-h2-dsb.pcapng"
MADE+=(tls13-h2-dsb)
fi
# TLS 1.2 CBC suites (added later: `make_tls.sh cbc` made them alone)
capture tls12-h1-cbc "${CURL[@]}" --http1.1 --tlsv1.2 --tls-max 1.2 --ciphers ECDHE-RSA-AES128-SHA "${URLS[@]}"
capture tls12-h2-cbc384 "${CURL[@]}" --http2 --parallel --tlsv1.2 --tls-max 1.2 --ciphers ECDHE-RSA-AES256-SHA384 "${URLS[@]}"
capture tls12-h1-cbc-noetm bash -c '
  { printf "GET /style.css HTTP/1.1\r\nHost: www.example.com\r\n\r\n"; sleep 0.5;
    printf "GET /index.html HTTP/1.1\r\nHost: www.example.com\r\nConnection: close\r\n\r\n"; sleep 1; } |
  openssl s_client -connect 127.0.0.1:443 -servername www.example.com -tls1_2 -cipher ECDHE-RSA-AES256-SHA -no_etm \
    -keylogfile "$SSLKEYLOGFILE" 2>/dev/null | wc -c'

# the oracle: tshark 4.0's decrypted view (out-of-order reassembly on: DESIGN.md's trap)
for name in "${MADE[@]}"; do  # (the captures made here: the folder holds other scripts' too)
  f=$HERE/$name.pcapng; kl=$HERE/${name%-dsb}.keylog; [ "$name" = tls13-h2-dsb ] && kl=/dev/null
  T=(tshark -n -d tcp.port==80,http2 -o tcp.reassemble_out_of_order:TRUE -o "tls.keylog_file:$kl" -r "$f")
  "${T[@]}" -Y http2.type==1 -T fields -e frame.time_epoch -e tcp.stream -e http2.streamid -e http2.header.name -e http2.header.value -E occurrence=a >"$HERE/$name.tshark-http2-headers.tsv"
  "${T[@]}" -Y http -T fields -e frame.time_epoch -e tcp.stream -e http.request.method -e http.request.uri -e http.response.code >"$HERE/$name.tshark-http1.tsv"
  "${T[@]}" -q -z http2,tree >"$HERE/$name.tshark-http2-tree.txt"
done
ls -la "$HERE"
