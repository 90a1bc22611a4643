#!/usr/bin/env bash
# Make the real browser captures in data/web/browser/ (issue 22, "Data and evidence"): Debian's
# headless Chromium driven by Playwright (browser_load.py) loads a page of 40 small objects from
# three host names (make_site.py), served by Debian's nginx (HTTP/1.1 cleartext, HTTPS HTTP/1.1
# with TLS 1.2 or 1.3, HTTP/2 over TLS 1.3) or by h3_server.py (aioquic, HTTP/3), through the tbf
# bottleneck of data/_testbed/testbed.sh (16 Mbit/s down, 1 Mbit/s up), idle, with a constant
# delay or seeded loss (tun_forwarder.py in the router namespace: no netem here), or under bulk
# TCP load (iperf3 -C cubic) up or down. Captured by tcpdump in the client namespace (the
# browser's side), web traffic to the three server addresses only.
#
# Usage (as root): data/web/browser/make_browser.sh [SCENARIO...]   (default: all, ~10 min)
# Needs: chromium nginx tcpdump iperf3 openssl iproute2 (Debian 12) and a Python with the
# project's 'data' extra (playwright, aioquic): PYTHON=/path/to/venv/bin/python (default:
# the worktree's .venv). Traffic stays inside the namespaces made here (br<pid>c/r/s), deleted
# on exit with everything this script started.
set -euo pipefail
export LC_ALL=C TZ=UTC

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
CAPS=${CAPS:-$HERE/captures}   # (overridable: trial runs elsewhere)
WORK=$(mktemp -d /tmp/br_web.XXXXXX)
chmod 755 "$WORK"
SITE=$WORK/site

NSC=br$$c NSR=br$$r NSS=br$$s
TESTBED_CONGCTL=cubic   # cubic for every TCP connection (TESTBED.md: bbr through tbf retransmits a lot)
. "$HERE/../../_testbed/testbed.sh"
WWW=www.example.com STATIC=static.example.com API=api.example.net
WWW_IP=198.51.100.2 STATIC_IP=198.51.100.3 API_IP=198.51.100.4   # one address per host name:
                                                                   # no HTTP/2 connection coalescing
TUN=brtun0
BUFFER=64         # packets at each bottleneck queue (tbf limit = 64 x 1514 B: 775 ms up, 48 ms down)
WARMUP_S=5        # bulk load runs this long before the page load
DRAIN_S=2         # capture after the browser closed
SEED=22
CAPTURE_FILTER=${CAPTURE_FILTER:-"(host $WWW_IP or host $STATIC_IP or host $API_IP) and (tcp port 80 or tcp port 443 or udp port 443)"}

# name  protocol  condition  delay_ms  loss  [buffer packets, default BUFFER]  [cipher: default | chacha | aes256]
#   cipher: chacha = TLS 1.2 ECDHE-ECDSA-CHACHA20-POLY1305 (RFC 7905); aes256 = TLS 1.3
#   TLS_AES_256_GCM_SHA384 (RFC 8446 B.4: SHA-384 key schedule); default: what Chromium and
#   nginx agree on (TLS 1.3 TLS_AES_128_GCM_SHA256, TLS 1.2 ECDHE-ECDSA-AES128-GCM-SHA256)
#   protocol: h1 (HTTP/1.1 cleartext) | tls12 / tls13 (HTTPS HTTP/1.1) | h2 (HTTP/2, TLS 1.3) | h3 (aioquic)
#             | h3v2 (h3 with Chromium offering only QUIC version 2, RFC 9369: --quic-version=RFCv2;
#               "protocol": "h3", "quic_version": "RFCv2" in its scenario.json)
#   condition: idle | delay | loss (tun_forwarder.py, both directions) | up / down (iperf3 bulk TCP)
SCENARIOS=(
  "h2-idle      h2    idle  0  0"
  "h1-idle      h1    idle  0  0"
  "h3-idle      h3    idle  0  0"
  "tls12-idle   tls12 idle  0  0"
  "h2-up        h2    up    0  0"
  "h2-loss      h2    loss  10 0.03"
  "h2-delay     h2    delay 25 0"
  "tls13-idle   tls13 idle  0  0"
  "h1-loss      h1    loss  10 0.03"
  "h3-loss      h3    loss  10 0.03"
  "h3-delay     h3    delay 25 0"
  "h2-down      h2    down  0  0"
  "h1-up        h1    up    0  0"
  "h2-up-b256   h2    up    0  0   256"
  "h3-up        h3    up    0  0"
  "h3-down      h3    down  0  0"
  "h1-delay     h1    delay 25 0"
  "tls13-loss   tls13 loss  10 0.03"
  "h1-up-b256   h1    up    0  0   256"
  "tls12-chacha-idle tls12 idle 0 0 64 chacha"
  "h2-aes256-idle    h2    idle 0 0 64 aes256"
  "h3v2-idle    h3v2  idle  0  0"
)

cleanup() {
  local pids
  pids=$(jobs -p)
  if [ -n "$pids" ]; then kill $pids 2>/dev/null || true; wait 2>/dev/null || true; fi
  [ -f "$WORK/nginx.pid" ] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
  testbed_down
  rm -rf "$WORK"
}
trap cleanup EXIT

make_cert() {  # one self-signed P-256 certificate for the three names; Chromium trusts its SPKI hash
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 7 \
    -subj "/CN=$WWW" -addext "subjectAltName=DNS:$WWW,DNS:$STATIC,DNS:$API" \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
  SPKI=$(openssl x509 -in "$WORK/cert.pem" -pubkey -noout | openssl pkey -pubin -outform der |
    openssl dgst -sha256 -binary | base64)
}

nginx_conf() {  # $1 protocol $2 cipher -> nginx.conf on stdout
  local proto=$1 cipher=${2:-default} listen tls=
  case $proto in
    h1) listen="80" ;;
    tls12) listen="443 ssl"; tls="ssl_protocols TLSv1.2;" ;;
    tls13) listen="443 ssl"; tls="ssl_protocols TLSv1.3;" ;;
    h2) listen="443 ssl http2"; tls="ssl_protocols TLSv1.3;" ;;
  esac
  case $cipher in
    chacha) tls+=" ssl_ciphers ECDHE-ECDSA-CHACHA20-POLY1305;" ;;
    aes256) tls+=" ssl_conf_command Ciphersuites TLS_AES_256_GCM_SHA384;" ;;
  esac
  cat <<EOF
user root;
worker_processes 1;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log;
events { worker_connections 256; }
http {
  types { text/html html; text/css css; application/javascript js; image/png png; application/json json; }
  log_format truth escape=json '{"time":\$msec,"connection":\$connection,"requests_on_connection":\$connection_requests,'
    '"remote_port":\$remote_port,"server_addr":"\$server_addr","host":"\$host","request":"\$request",'
    '"status":\$status,"body_bytes":\$body_bytes_sent,"bytes_sent":\$bytes_sent,"request_time":\$request_time,'
    '"protocol":"\$server_protocol","ssl_protocol":"\$ssl_protocol","ssl_cipher":"\$ssl_cipher"}';
  access_log $WORK/access.jsonl truth;
  client_body_temp_path $WORK/tmp; proxy_temp_path $WORK/tmp; fastcgi_temp_path $WORK/tmp;
  uwsgi_temp_path $WORK/tmp; scgi_temp_path $WORK/tmp;
  sendfile off; tcp_nodelay on; keepalive_timeout 120s; gzip off; etag off;
  # Resource Timing Level 2 4.5: detailed cross-origin times need Timing-Allow-Origin
  add_header Timing-Allow-Origin "*" always;
  add_header Access-Control-Allow-Origin "*" always;
  add_header Cache-Control "no-store" always;
  ssl_certificate $WORK/cert.pem; ssl_certificate_key $WORK/key.pem; $tls
  server { listen $WWW_IP:$listen; server_name $WWW; root $SITE/$WWW; }
  server { listen $STATIC_IP:$listen; server_name $STATIC; root $SITE/$STATIC; }
  server { listen $API_IP:$listen; server_name $API; root $SITE/$API; }
}
EOF
}

run_scenario() {
  local name=$1 proto=$2 cond=$3 delay=$4 loss=$5 buffer=${6:-$BUFFER} cipher=${7:-default} qver=
  if [ "$proto" = h3v2 ]; then proto=h3 qver=RFCv2; fi   # h3 in every other respect
  echo "== $name: $proto, $cond (delay $delay ms, loss $loss, buffer $buffer packets)"
  testbed_up "$buffer"
  ip -n "$NSS" addr add $STATIC_IP/24 dev s0
  ip -n "$NSS" addr add $API_IP/24 dev s0
  # static neighbour entries: an ARP request queued behind bulk load in tbf (3 s at 256 packets)
  # times out and Chromium gets ERR_ADDRESS_UNREACHABLE; a real access router's next hop is one
  # gateway whose address is long resolved
  local cmac smac rcmac rsmac ip
  cmac=$(ip -n "$NSC" -br link show c0 | awk '{print $3}')
  smac=$(ip -n "$NSS" -br link show s0 | awk '{print $3}')
  rcmac=$(ip -n "$NSR" -br link show rc0 | awk '{print $3}')
  rsmac=$(ip -n "$NSR" -br link show rs0 | awk '{print $3}')
  ip -n "$NSR" neigh replace $CLIENT_IP lladdr "$cmac" dev rc0 nud permanent
  for ip in $WWW_IP $STATIC_IP $API_IP; do ip -n "$NSR" neigh replace $ip lladdr "$smac" dev rs0 nud permanent; done
  ip -n "$NSC" neigh replace $ROUTER_C_IP lladdr "$rcmac" dev c0 nud permanent
  ip -n "$NSS" neigh replace $ROUTER_S_IP lladdr "$rsmac" dev s0 nud permanent
  for ns in "$NSC" "$NSR" "$NSS"; do   # RPS on one CPU: no reordering of a flow between cores
    ip netns exec "$ns" sh -c 'for f in /sys/class/net/*/queues/rx-0/rps_cpus; do echo 1 >$f; done' 2>/dev/null || true
  done
  rm -f "$CAPS/$name".*
  local fwdpid= fcmd=
  if [ "$cond" = delay ] || [ "$cond" = loss ]; then
    fcmd="tun_forwarder.py --dev $TUN --delay-ms $delay --loss $loss --seed $SEED --log $name.drops.jsonl --max-seconds 200"
    ip netns exec "$NSR" sh -c "cd '$WORK' && exec python3 '$HERE/'$fcmd" >"$WORK/fwd.log" 2>&1 &
    fwdpid=$!
    wait_for "$WORK/fwd.log" forwarding
    in_r ip link set $TUN up
    for dev in all default $TUN rc0 rs0; do in_r sysctl -qw net.ipv4.conf.$dev.rp_filter=0; done
    in_r ip route add default dev $TUN table 100
    in_r ip rule add iif rc0 lookup 100
    in_r ip rule add iif rs0 lookup 100
  fi

  local scmd srvpid
  if [ "$proto" = h3 ]; then
    scmd="h3_server.py --root site --cert cert.pem --key key.pem --bind $WWW_IP --bind $STATIC_IP --bind $API_IP --access-log access.jsonl --secrets-log server.keylog"
    ip netns exec "$NSS" sh -c "cd '$WORK' && exec timeout 300 '$PYTHON' -u '$HERE/'$scmd" >"$WORK/server.log" 2>&1 &
    srvpid=$!
    wait_for "$WORK/server.log" "serving HTTP/3"
  else
    nginx_conf "$proto" "$cipher" >"$WORK/nginx.conf"
    mkdir -p "$WORK/tmp"
    rm -f "$WORK/access.jsonl"
    scmd="nginx -c nginx.conf"
    ip netns exec "$NSS" timeout 300 nginx -p "$WORK" -c "$WORK/nginx.conf" >"$WORK/server.log" 2>&1 &
    srvpid=$!
    for i in $(seq 50); do [ -s "$WORK/nginx.pid" ] && break; sleep 0.1; done
  fi

  local ccmd="tcpdump -i c0 --immediate-mode -s 1600 -B 16384 -w $name.pcap '$CAPTURE_FILTER'"
  ip netns exec "$NSC" sh -c "cd '$WORK' && exec $ccmd" 2>"$WORK/cap.log" &
  local cpid=$!
  wait_for "$WORK/cap.log" "listening on"

  local iperfs= iperfc= lcmd=
  if [ "$cond" = up ] || [ "$cond" = down ]; then
    local rx tx dst flows
    if [ "$cond" = up ]; then rx=$NSS tx=$NSC dst=$WWW_IP flows=1; else rx=$NSC tx=$NSS dst=$CLIENT_IP flows=8; fi
    ip netns exec "$rx" timeout -s INT 200 iperf3 -s -1 -B "$dst" -p 5201 >"$WORK/iperf-server.txt" 2>&1 &
    iperfs=$!
    sleep 0.5
    lcmd="iperf3 -c $dst -p 5201 -C cubic -P $flows -t 150"
    ip netns exec "$tx" timeout -s INT 160 $lcmd >"$WORK/iperf.txt" 2>&1 &
    iperfc=$!
    sleep "$WARMUP_S"
  fi

  local scheme=https quic=()
  [ "$proto" = h1 ] && scheme=http
  [ "$proto" = h3 ] && quic=(--quic $WWW --quic $STATIC --quic $API)
  [ -n "$qver" ] && quic+=(--quic-version $qver)
  local bcmd="browser_load.py --url $scheme://$WWW/index.html --out $name --map $WWW=$WWW_IP --map $STATIC=$STATIC_IP --map $API=$API_IP --spki SPKI ${quic[*]}"
  ip netns exec "$NSC" sh -c "cd '$WORK' && exec '$PYTHON' '$HERE/'${bcmd/SPKI/$SPKI}" 2>&1 | tee "$WORK/browser.log" || echo "  browser failed" >&2
  sleep "$DRAIN_S"
  kill -INT "$cpid"; wait "$cpid" || true
  if [ -n "$iperfc" ]; then kill -INT "$iperfc" "$iperfs" 2>/dev/null || true; wait "$iperfc" "$iperfs" 2>/dev/null || true; fi
  if [ -n "$fwdpid" ]; then kill -TERM "$fwdpid"; wait "$fwdpid" || true; fi
  if [ "$proto" = h3 ]; then kill "$srvpid" 2>/dev/null || true; else kill -QUIT "$(cat "$WORK/nginx.pid")" 2>/dev/null || true; fi
  wait "$srvpid" 2>/dev/null || true
  rm -f "$WORK/nginx.pid"
  in_r tc -s qdisc show >"$WORK/qdisc-stats.txt"
  testbed_down

  mkdir -p "$CAPS"
  for ext in pcap keylog har timing.json command.json drops.jsonl; do
    [ -e "$WORK/$name.$ext" ] && mv "$WORK/$name.$ext" "$CAPS/"
  done
  mv "$WORK/access.jsonl" "$CAPS/$name.server-access.jsonl"
  [ -s "$WORK/server.keylog" ] && mv "$WORK/server.keylog" "$CAPS/$name.server.keylog"
  rm -f "$WORK/server.keylog"
  "$PYTHON" - "$CAPS/$name.scenario.json" <<EOF
import json, sys
d = {"scenario": "$name", "protocol": "$proto", "condition": "$cond", "delay_ms_each_way": $delay,
     "loss_each_way": $loss, "loss_seed": $SEED if "$cond" == "loss" else None,
     "buffer_packets": $buffer, "cipher": "$cipher", "quic_version": "$qver" or None, "uplink_rate": "$UP_RATE", "downlink_rate": "$DOWN_RATE",
     "hosts": {"$WWW": "$WWW_IP", "$STATIC": "$STATIC_IP", "$API": "$API_IP"},
     "client_ip": "$CLIENT_IP", "page": "$scheme://$WWW/index.html",
     "server_command": "$scmd", "capture_command": "$ccmd",
     "forwarder_command": "$fcmd" or None, "load_command": "$lcmd" or None,
     "browser_command": "$bcmd".replace("SPKI", "<base64 SHA-256 of the certificate's SPKI>"),
     "qdisc_stats_at_end": open("$WORK/qdisc-stats.txt").read().splitlines(),
     "capture_stats": [l for l in open("$WORK/cap.log").read().splitlines() if "packets" in l]}
json.dump(d, open(sys.argv[1], "w"), indent=1)
EOF
  chmod 644 "$CAPS/$name".*
  ls -l "$CAPS/$name".* | awk '{s += $5} END {print "  " NR " files, " s " bytes"}'
}

"$PYTHON" "$HERE/make_site.py" "$SITE" >/dev/null
cp "$SITE/manifest.json" "$HERE/site-manifest.json"
make_cert
want=("$@")
for line in "${SCENARIOS[@]}"; do
  read -ra f <<<"$line"
  if [ ${#want[@]} -gt 0 ] && [[ " ${want[*]} " != *" ${f[0]} "* ]]; then continue; fi
  run_scenario "${f[@]}"
done
