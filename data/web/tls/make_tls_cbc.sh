#!/usr/bin/env bash
# Make the TLS 1.2 CBC decryption samples in data/web/tls/, as make_tls.sh makes the others (the same
# page, nginx 1.22, curl 7.88 / OpenSSL 3.0, a network namespace of its own, loopback only):
#   tls12-h1-cbc        TLS 1.2, ECDHE-RSA-AES128-SHA (AES-128-CBC, HMAC-SHA1), HTTP/1.1 keep-alive;
#                       OpenSSL negotiates encrypt_then_mac (RFC 7366)
#   tls12-h2-cbc384     TLS 1.2, ECDHE-RSA-AES256-SHA384 (AES-256-CBC, HMAC-SHA384, PRF SHA-384),
#                       HTTP/2 parallel streams, encrypt_then_mac
#   tls12-h1-cbc-noetm  TLS 1.2, ECDHE-RSA-AES256-SHA (AES-256-CBC, HMAC-SHA1) via `openssl s_client
#                       -no_etm` (HTTP/1.1 by hand): MAC-then-encrypt (RFC 5246 §6.2.3.2)
# Then what tshark 4.0 decrypts from each (the oracle of the tests): *.tshark-http*.tsv.
# Usage (as root): data/web/tls/make_tls_cbc.sh      Needs: nginx curl openssl tcpdump tshark editcap.
set -euo pipefail
export LC_ALL=C TZ=UTC
HERE=$(cd "$(dirname "$0")" && pwd)
SITE=$(cd "$HERE/../site" && pwd)
WORK=$(mktemp -d /tmp/wx-cbc.XXXXXX)
NS=wxcbc$$
cleanup() {
  [ -f "$WORK/nginx.pid" ] && ip netns exec $NS kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
  ip netns del $NS 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
ip netns add $NS
ip -n $NS link set lo up mtu 1500

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
    ssl_protocols TLSv1.2; ssl_prefer_server_ciphers off; ssl_session_tickets off;
    ssl_ciphers ECDHE-RSA-AES128-SHA:ECDHE-RSA-AES256-SHA:ECDHE-RSA-AES256-SHA384;
  }
}
CONF
ip netns exec $NS nginx -c "$WORK/nginx.conf"
sleep 0.5

URLS=(https://www.example.com/index.html https://www.example.com/style.css https://www.example.com/img1.jpg
      https://www.example.com/img2.jpg https://www.example.com/missing.png)
CURL=(curl -sS -k --resolve www.example.com:443:127.0.0.1 -o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null
      -w '%{url_effective}\t%{http_code}\t%{http_version}\t%{size_download}\t%{time_appconnect}\t%{time_starttransfer}\t%{time_total}\n')

capture() {  # name, command...
  local name=$1; shift
  rm -f "$HERE/$name.keylog"
  ip netns exec $NS tcpdump -i lo -s 0 -B 32768 --immediate-mode -w "$WORK/$name.pcap" tcp port 443 2>"$WORK/$name.tcpdump.log" &
  local tpid=$!
  sleep 1
  SSLKEYLOGFILE=$HERE/$name.keylog ip netns exec $NS "$@" >"$HERE/$name.curl-w.tsv" || true
  sleep 1
  kill $tpid; wait $tpid 2>/dev/null || true
  grep -h "dropped by kernel" "$WORK/$name.tcpdump.log" | sed "s/^/$name: /" >&2
  editcap -F pcapng "$WORK/$name.pcap" "$HERE/$name.pcapng"
}

capture tls12-h1-cbc "${CURL[@]}" --http1.1 --tlsv1.2 --tls-max 1.2 --ciphers ECDHE-RSA-AES128-SHA "${URLS[@]}"
capture tls12-h2-cbc384 "${CURL[@]}" --http2 --parallel --tlsv1.2 --tls-max 1.2 --ciphers ECDHE-RSA-AES256-SHA384 "${URLS[@]}"
capture tls12-h1-cbc-noetm bash -c '
  { printf "GET /style.css HTTP/1.1\r\nHost: www.example.com\r\n\r\n"; sleep 0.5;
    printf "GET /index.html HTTP/1.1\r\nHost: www.example.com\r\nConnection: close\r\n\r\n"; sleep 1; } |
  openssl s_client -connect 127.0.0.1:443 -servername www.example.com -tls1_2 -cipher ECDHE-RSA-AES256-SHA -no_etm \
    -keylogfile "$SSLKEYLOGFILE" 2>/dev/null | wc -c'

for name in tls12-h1-cbc tls12-h2-cbc384 tls12-h1-cbc-noetm; do
  f=$HERE/$name.pcapng
  T=(tshark -n -o tcp.reassemble_out_of_order:TRUE -o "tls.keylog_file:$HERE/$name.keylog" -r "$f")
  "${T[@]}" -Y http2.type==1 -T fields -e frame.time_epoch -e tcp.stream -e http2.streamid -e http2.header.name -e http2.header.value -E occurrence=a >"$HERE/$name.tshark-http2-headers.tsv"
  "${T[@]}" -Y http -T fields -e frame.time_epoch -e tcp.stream -e http.request.method -e http.request.uri -e http.response.code >"$HERE/$name.tshark-http1.tsv"
  "${T[@]}" -q -z http2,tree >"$HERE/$name.tshark-http2-tree.txt"
done
ls -la "$HERE"/tls12-*cbc*
