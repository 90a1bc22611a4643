#!/usr/bin/env bash
# Real Chromium captures of TLS session resumption (issue 22): a page loaded twice in one browser,
# 3 s apart, so the second load opens a new connection and resumes the first one's session.
#   h3-0rtt  HTTP/3 to h3_resume_server.py (aioquic: tickets allow early data, idle timeout 1 s):
#            does Chromium send its second load's request as QUIC 0-RTT?
#   h2-hrr   HTTP/2 over TLS 1.3 to Debian's nginx with `ssl_ecdh_curve secp384r1` (the only group
#            it accepts; Chromium key-shares X25519MLKEM768 and X25519): a HelloRetryRequest on
#            every connection; `ssl_early_data on` and keepalive_timeout 1s (does Chromium send
#            TLS 1.3 early data over TCP?).
# All on the loopback of a network namespace of its own (qic-br): no other traffic; Chromium maps
# www.example.com to 127.0.0.1 (--host-resolver-rules) and trusts the per-run certificate by its
# SPKI hash. Usage (as root): data/web/resume/make_resume.sh [PYTHON]  (PYTHON: with playwright
# and aioquic, default the worktree's .venv). Files per scenario <name>: .pcap (tcpdump -i lo),
# .keylog (Chromium's SSLKEYLOGFILE), .timing.json (both loads' Navigation/Resource Timing),
# .command.json, .server-access.jsonl (the server's view: resumed, early data accepted), .server.keylog (h3).
set -euo pipefail
export LC_ALL=C TZ=UTC
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${1:-$HERE/../../../.venv/bin/python}
NS=qic-br
WORK=$(mktemp -d /tmp/qic-br.XXXXXX)
cleanup() { ip netns pids $NS 2>/dev/null | xargs -r kill 2>/dev/null || true; sleep 0.5; ip netns del $NS 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
chmod 755 "$WORK"  # nginx's worker (www-data) reads the site
SITE=$WORK/site
mkdir -p "$SITE"
printf '<!DOCTYPE html>\n<html><head><title>resume</title><link rel="stylesheet" href="/style.css"></head>\n<body><h1>Session resumption</h1><p>%s</p></body></html>\n' "$(printf 'x%.0s' $(seq 1 200))" > "$SITE/index.html"
printf 'body { font-family: sans-serif; color: #223; }\nh1 { font-size: 2em; }\n' > "$SITE/style.css"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" \
  -days 2 -subj /CN=www.example.com -addext subjectAltName=DNS:www.example.com 2>/dev/null
SPKI=$(openssl x509 -in "$WORK/cert.pem" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)

start_ns() { ip netns del $NS 2>/dev/null || true; ip netns add $NS; ip -n $NS link set lo up; }
capture() { ip netns exec $NS tcpdump -i lo -s 0 -U --immediate-mode -w "$HERE/$1.pcap" "port 443" 2>/dev/null & TPID=$!; sleep 1; }
stop_capture() { sleep 1; kill $TPID; wait $TPID 2>/dev/null || true; }

# -- h3-0rtt ---------------------------------------------------------------------------------------
name=h3-0rtt
start_ns
rm -f "$HERE/$name".{server.keylog,server-access.jsonl}
ip netns exec $NS timeout 60 "$PY" "$HERE/h3_resume_server.py" --root "$SITE" --cert "$WORK/cert.pem" --key "$WORK/key.pem" \
  --bind 127.0.0.1 --idle-timeout-s 1 --secrets-log "$HERE/$name.server.keylog" --access-log "$HERE/$name.server-access.jsonl" &
sleep 2
capture $name
ip netns exec $NS timeout 90 "$PY" "$HERE/resume_load.py" --url https://www.example.com/index.html --out "$HERE/$name" \
  --map www.example.com=127.0.0.1 --spki "$SPKI" --quic www.example.com --gap-s 3
stop_capture
ip netns pids $NS | xargs -r kill 2>/dev/null || true

# -- h2-hrr ----------------------------------------------------------------------------------------
name=h2-hrr
start_ns
rm -f "$HERE/$name.server-access.jsonl"
cat > "$WORK/nginx.conf" <<CONF
worker_processes 1;
pid $WORK/nginx.pid;
error_log $WORK/error.log;
events { worker_connections 64; }
http {
  log_format j '{"time":\$msec,"connection":\$connection,"requests":\$connection_requests,"request":"\$request",'
               '"status":\$status,"bytes":\$body_bytes_sent,"tls":"\$ssl_protocol","cipher":"\$ssl_cipher",'
               '"curve":"\$ssl_curve","reused":"\$ssl_session_reused","early_data":"\$ssl_early_data"}';
  access_log $HERE/$name.server-access.jsonl j;
  client_body_temp_path $WORK/cb; proxy_temp_path $WORK/px; fastcgi_temp_path $WORK/fc; uwsgi_temp_path $WORK/uw; scgi_temp_path $WORK/sc;
  types { text/html html; text/css css; }
  server {
    listen 127.0.0.1:443 ssl http2;
    ssl_certificate $WORK/cert.pem; ssl_certificate_key $WORK/key.pem;
    ssl_protocols TLSv1.3;
    ssl_ecdh_curve secp384r1;
    ssl_early_data on;
    ssl_session_tickets on;
    keepalive_timeout 1s;
    root $SITE;
    add_header Cache-Control no-store;
  }
}
CONF
ip netns exec $NS timeout 60 nginx -c "$WORK/nginx.conf" -p "$WORK" -g 'daemon off;' &
sleep 1
capture $name
ip netns exec $NS timeout 90 "$PY" "$HERE/resume_load.py" --url https://www.example.com/index.html --out "$HERE/$name" \
  --map www.example.com=127.0.0.1 --spki "$SPKI" --gap-s 3
stop_capture
ls -la "$HERE"
