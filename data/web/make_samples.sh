#!/usr/bin/env bash
# Make the real web samples in data/web/: the seed paper's page (§9.1: HTML 15 KB, CSS 5.8 KB, two
# 30 KB JPEGs), served by Python's http.server (HTTP/1.0, a connection per object) and by a
# keep-alive HTTP/1.1 server (tools/web_server.py, the HTML sent chunked), also over HTTPS, to curl
# (per-object -w timings) and wget -p (page requisites), through the tbf bottleneck of
# data/_testbed/ (TESTBED.md) idle and with up- or downlink bulk TCP load (iperf3 -C cubic), with
# a DNS lookup before each page; captured by tcpdump at the client (full packets) and the server
# (headers only); then what tshark says about each capture.
#
# Usage (as root, from anywhere):   data/web/make_samples.sh [site|pages|stats|all] [SCENARIO...]
#   site    write site/ (the page: tools/make_site.py + ffmpeg JPEGs; bit-exact reproducible)
#   pages   run the scenarios, write captures/* (captures, client timings, keylogs)
#   stats   tshark outputs per capture + captures/manifest.json + measured.md
#   all     (default) the three in order. SCENARIO names restrict "pages" to those scenarios.
# Needs: python3 curl wget openssl ffmpeg tcpdump tshark iperf3 iproute2 (Debian 12 packages).
# Whole run: about 5 minutes. Network traffic stays inside the namespaces made here; the
# namespaces and the client's /etc/netns/<ns>/ (resolv.conf, hosts) are deleted on exit (also
# on failure).
# The site is bit-exact reproducible; captures are not (real timing).
set -euo pipefail
export LC_ALL=C TZ=UTC

HERE=$(cd "$(dirname "$0")" && pwd)
SITE=$HERE/site
CAPS=$HERE/captures
TOOLS=$HERE/tools
WORK=$(mktemp -d /tmp/qoe-web.XXXXXX)

# ---------------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------------
# Two ~30 KB baseline JPEGs from FFmpeg's mandelbrot source (mjpeg, one thread: bit-exact)
IMG1_ARGS=(-f lavfi -i "mandelbrot=s=480x360:r=1:start_scale=1.5" -frames:v 1 -c:v mjpeg -q:v 4 -threads 1 -pix_fmt yuvj420p)
IMG2_ARGS=(-f lavfi -i "mandelbrot=s=640x480:r=1:start_scale=3:start_x=-0.743643887037151:start_y=0.131825904205330"
  -frames:v 1 -c:v mjpeg -q:v 4 -threads 1 -pix_fmt yuvj420p)

make_site() {
  mkdir -p "$SITE"
  python3 "$TOOLS/make_site.py" "$SITE"
  ffmpeg -nostdin -hide_banner -loglevel error -y "${IMG1_ARGS[@]}" -fflags +bitexact -flags +bitexact "$SITE/img1.jpg"
  ffmpeg -nostdin -hide_banner -loglevel error -y "${IMG2_ARGS[@]}" -fflags +bitexact -flags +bitexact "$SITE/img2.jpg"
  # one modification time for every object (Last-Modified headers the same from run to run)
  touch -d 2014-11-05T12:00:00Z "$SITE"/*
  (cd "$SITE" && for f in index.html style.css img1.jpg img2.jpg; do echo "site/$f: $(stat -c %s $f) bytes, md5 $(md5sum <$f | cut -c1-32)"; done)
}

# ---------------------------------------------------------------------------------------------
# Testbed (data/_testbed/testbed.sh): client <-> router <-> server, tbf on the router's egresses
# ---------------------------------------------------------------------------------------------
NSC=qoeweb$$c NSR=qoeweb$$r NSS=qoeweb$$s
# every TCP connection of the client and the server uses cubic, like the seed paper's access
# testbed (§5.2: "TCP BIC/TCP CUBIC for the access"), not this kernel's default bbr: the web
# server cannot choose one itself (see the README)
TESTBED_CONGCTL=cubic
. "$HERE/../_testbed/testbed.sh"
HOST=www.example.com        # the page's host name (RFC 2606 documentation name), resolved by
                            # tools/dns_server.py in the server namespace or by a hosts file
NETNS_ETC=/etc/netns/$NSC   # ip netns exec bind-mounts its files over /etc (resolv.conf, hosts)

cleanup() {
  local ns pids
  # stop what this script started in the background (servers, captures, load), by pid
  pids=$(jobs -p)
  if [ -n "$pids" ]; then kill $pids 2>/dev/null || true; wait 2>/dev/null || true; fi
  for ns in "$NSC" "$NSR" "$NSS"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$NETNS_ETC"
  rmdir /etc/netns 2>/dev/null || true   # only if empty (made by this script)
  rm -rf "$WORK"
}
trap cleanup EXIT

# ---------------------------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------------------------
# One capture per scenario: the client loads the page REPS times (IDLE_GAP_S apart), each load a
# fresh client process.
# columns: name server client load buffer reps dns
#   server:  http10      python3 -m http.server (HTTP/1.0: one connection per object; Nagle on)
#            http10close tools/web_server.py HTTP/1.0, the HTML without Content-Length (a
#                        close-delimited body), the other objects with it
#            http11      tools/web_server.py HTTP/1.1 (keep-alive), the HTML chunked
#            https10     tools/web_server.py HTTP/1.0 over TLS (a TLS handshake per object)
#            https11     tools/web_server.py HTTP/1.1 over TLS, the HTML chunked
#   client:  curl (the four URLs in one process, -w per object) | wget (-p: the page and its
#            requisites, Referer sent; -e robots=off) | wget-robots (the same, robots.txt asked
#            for first: a 404, after which the HTTP/1.1 server closes the connection)
#   load:    none | up (UP_FLOWS bulk TCP client -> server) | down (DOWN_FLOWS server -> client)
#   buffer:  N packets at each bottleneck: N = tbf limit N x 1514 bytes (TESTBED.md; a small packet
#            fits where a full-size one does not); Np = a pfifo of N packets under each tbf (the
#            seed paper's router counts packets: a full queue drops ACKs and requests too)
#   dns:     dns   the client looks the name up (glibc: A and AAAA queries) at the DNS server in
#                  the server namespace, through the bottleneck: the page load starts with them
#            hosts the name is in the client's hosts file: no DNS, the page load starts with a SYN
#                  (loaded runs, so that a lost DNS reply -- glibc waits 5 s before it asks again
#                  -- does not hide what TCP does; the -dns scenarios keep it on purpose)
SCENARIOS=(
  "http10-idle-b64-curl       http10      curl        none 64 1 dns"
  "http10-idle-b64-wget       http10      wget        none 64 1 dns"
  "http10close-idle-b64-curl  http10close curl        none 64 1 dns"
  "http11-idle-b64-curl       http11      curl        none 64 1 dns"
  "http11-idle-b64-wget       http11      wget        none 64 1 dns"
  "http11-idle-b64-wgetrobots http11      wget-robots none 64 1 dns"
  "http11-idle-b64-curl-x3    http11      curl        none 64 3 dns"
  "https10-idle-b64-curl      https10     curl        none 64 1 dns"
  "https11-idle-b64-curl      https11     curl        none 64 1 dns"
  "https11-idle-b64-wget      https11     wget        none 64 1 dns"
  "http11-idle-b8-curl        http11      curl        none 8  1 dns"
  "http11-idle-b8-wget        http11      wget        none 8  1 dns"
  "http11-up-b8-curl          http11      curl        up   8  1 hosts"
  "http11-up-b8-wget          http11      wget        up   8  1 hosts"
  "http11-up-b64-curl         http11      curl        up   64 1 hosts"
  "http11-up-b64-wget         http11      wget        up   64 1 hosts"
  "http10-up-b8-wget          http10      wget        up   8  1 hosts"
  "http10-up-b64-wget         http10      wget        up   64 1 hosts"
  "http11-down-b8-curl        http11      curl        down 8  1 hosts"
  "http11-down-b8-wget        http11      wget        down 8  1 hosts"
  "http11-down-b64-curl       http11      curl        down 64 1 hosts"
  "http11-down-b64-wget       http11      wget        down 64 1 hosts"
  "https11-up-b8-curl         https11     curl        up   8  1 hosts"
  "https11-down-b8-curl       https11     curl        down 8  1 hosts"
  "http11-up-b8p-curl         http11      curl        up   8p 1 hosts"
  "http11-up-b8p-wget         http11      wget        up   8p 1 hosts"
  "http11-up-b64-wget-dns     http11      wget        up   64 1 dns"
  "http11-down-b8-curl-dns    http11      curl        down 8  1 dns"
)
UP_FLOWS=1        # seed paper Table 1, access "long-few": 1 upstream flow ...
DOWN_FLOWS=8      # ... or 8 downstream flows (long-lived, "infinite" size)
WARMUP_S=5        # bulk TCP runs this long before the first page load (fills the queue)
IDLE_GAP_S=3      # between page loads in one capture (more than the 2 s page-split default)
DRAIN_S=3         # keep capturing after the last page load (FIN exchange through a full queue)
CLIENT_TIMEOUT_S=120
SERVER_SNAPLEN=96    # server capture: Ethernet + IP + TCP with options (+ the first payload bytes)
CAPTURE_FILTER="port 53 or port 80 or port 443"   # DNS + web only: no bulk TCP (iperf3 5201)

CURL_FIELDS=(url_effective http_code http_version remote_ip remote_port local_port num_connects
  size_request size_header size_download time_namelookup time_connect time_appconnect
  time_pretransfer time_starttransfer time_total exitcode errormsg)
curl_format() { local f out=; for f in "${CURL_FIELDS[@]}"; do out+="%{$f}\\t"; done; echo "'${out%\\t}\\n'"; }

port_of() { case $1 in https*) echo 443 ;; *) echo 80 ;; esac; }
scheme_of() { case $1 in https*) echo https ;; *) echo http ;; esac; }

server_command() {  # $1 server kind: the command (run in site/ of the server namespace)
  local tls="--tls $WORK/cert.pem $WORK/key.pem" common="python3 $TOOLS/web_server.py --directory . --bind $SERVER_IP"
  case $1 in
    http10) echo "python3 -u -m http.server 80 --bind $SERVER_IP --directory ." ;;
    http10close) echo "$common --port 80 --protocol HTTP/1.0 --no-length index.html" ;;
    http11) echo "$common --port 80 --protocol HTTP/1.1 --chunked index.html" ;;
    https10) echo "$common --port 443 --protocol HTTP/1.0 $tls" ;;
    https11) echo "$common --port 443 --protocol HTTP/1.1 --chunked index.html $tls" ;;
    *) echo "unknown server $1" >&2; return 1 ;;
  esac
}

client_command() {  # $1 client $2 server kind $3 output prefix (in $WORK): the command line
  local base
  base="$(scheme_of "$2")://$HOST"
  case $1 in
    curl)
      # -v --trace-time: every verbose line (connects, request and response headers) with its
      # wall-clock time (UTC); -w: one tab-separated line of timings per URL (CURL_FIELDS)
      echo "curl -sS -v --trace-time -k --max-time $CLIENT_TIMEOUT_S -w $(curl_format)" \
        "-o /dev/null $base/ -o /dev/null $base/style.css -o /dev/null $base/img1.jpg -o /dev/null $base/img2.jpg" ;;
    wget|wget-robots)
      # -p: the page and its requisites (Referer: the page); -d: debug log with the headers;
      # -e robots=off: without it wget -p also asks for /robots.txt (404 here) first
      echo "wget -p -d -t 1 -T $CLIENT_TIMEOUT_S --no-config --no-hsts --no-check-certificate$([ "$1" = wget ] && echo " -e robots=off") -P $3.files -o $3.log $base/" ;;
    *) echo "unknown client $1" >&2; return 1 ;;
  esac
}

make_cert() {  # a fresh self-signed P-256 certificate for $HOST (not kept: nothing is decrypted
               # with it; the client keylogs next to the captures decrypt the TLS captures)
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 7 \
    -subj "/CN=$HOST" -addext "subjectAltName=DNS:$HOST" \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
}

run_scenario() {
  local name=$1 server=$2 client=$3 load=$4 buf=$5 reps=$6 dns=$7
  local cfile=${name}_client.pcap sfile=${name}_server.pcap queue=bytes
  if [[ $buf == *p ]]; then queue=packets buf=${buf%p}; fi
  echo "== $name: $server, $client, load $load, buffer $buf packets ($queue), $reps page load(s), $dns"
  testbed_up "$buf" "$queue"
  in_r tc qdisc show >"$WORK/qdisc.txt"
  ip -n "$NSS" route show default >"$WORK/route.txt"
  in_s sysctl net.ipv4.tcp_sack net.ipv4.tcp_timestamps net.ipv4.tcp_ecn net.ipv4.tcp_recovery \
    net.ipv4.tcp_early_retrans net.ipv4.tcp_slow_start_after_idle net.ipv4.tcp_congestion_control >"$WORK/sysctl.txt"
  rm -f "$CAPS/$name"_* "$CAPS/$name".*
  mkdir -p "$NETNS_ETC"
  printf 'nameserver %s\n' "$SERVER_IP" >"$NETNS_ETC/resolv.conf"
  { cat /etc/hosts; [ "$dns" = dns ] || printf '%s %s\n' "$SERVER_IP" "$HOST"; } >"$NETNS_ETC/hosts"

  # servers (background processes started with "ip netns exec" itself: $! is the process)
  ip netns exec "$NSS" timeout 300 python3 "$TOOLS/dns_server.py" --bind $SERVER_IP "$HOST=$SERVER_IP" \
    2>"$WORK/dns.log" &
  local dnspid=$!
  local scmd
  scmd=$(server_command "$server")
  ip netns exec "$NSS" sh -c "cd '$SITE' && exec timeout 300 $scmd" >"$WORK/server.out" 2>"$WORK/server.log" &
  local srvpid=$!
  wait_for "$WORK/dns.log" "answering"
  if [ "$server" = http10 ]; then wait_for "$WORK/server.out" "Serving HTTP"; else wait_for "$WORK/server.log" "serving"; fi

  # captures
  local ccmd="tcpdump -i c0 --immediate-mode -s 0 -w $cfile $CAPTURE_FILTER"
  local sscmd="tcpdump -i s0 --immediate-mode -s $SERVER_SNAPLEN -w $sfile $CAPTURE_FILTER"
  ip netns exec "$NSC" sh -c "cd '$WORK' && exec $ccmd" 2>"$WORK/ccap.log" &
  local cpid=$!
  ip netns exec "$NSS" sh -c "cd '$WORK' && exec $sscmd" 2>"$WORK/scap.log" &
  local spid=$!
  wait_for "$WORK/ccap.log" "listening on"
  wait_for "$WORK/scap.log" "listening on"

  # load: iperf3 -C cubic, stopped with SIGINT after the page loads (it still writes its JSON)
  local iperfs= iperfc=
  rm -f "$WORK"/iperf-*
  if [ "$load" != none ]; then
    local rx tx dst flows
    if [ "$load" = up ]; then rx=$NSS tx=$NSC dst=$SERVER_IP flows=$UP_FLOWS; else rx=$NSC tx=$NSS dst=$CLIENT_IP flows=$DOWN_FLOWS; fi
    ip netns exec "$rx" timeout -s INT 300 iperf3 -s -1 -B "$dst" -p 5201 >"$WORK/iperf-server.txt" 2>&1 &
    iperfs=$!
    sleep 0.5
    ip netns exec "$tx" timeout -s INT 280 iperf3 -c "$dst" -p 5201 -C cubic -P "$flows" -t 270 -J \
      >"$WORK/iperf.json" 2>"$WORK/iperf.err" &
    iperfc=$!
    date +%s.%N >"$WORK/load-start.txt"
    sleep "$WARMUP_S"
  fi

  # the page loads. curl --trace-time prints whole seconds of the wall clock (taken once, at
  # start) plus the fraction of CLOCK_MONOTONIC: the wall-clock minus monotonic offset, read
  # here, lets summarize.py put its lines back on the wall clock (see the README)
  local clock_offset
  clock_offset=$(python3 -c 'import time; print(f"{time.clock_gettime(time.CLOCK_REALTIME) - time.clock_gettime(time.CLOCK_MONOTONIC):.6f}")')
  local i prefix ccl t0 t1 times=()
  for i in $(seq "$reps"); do
    prefix=$WORK/$name.$i
    ccl=$(client_command "$client" "$server" "$prefix")
    t0=$(date +%s.%N)
    if [ "$client" = curl ]; then
      # (through sh -c: the -w format is one quoted word, as recorded)
      ip netns exec "$NSC" env SSLKEYLOGFILE="$prefix.keylog" timeout $((CLIENT_TIMEOUT_S + 10)) \
        sh -c "exec $ccl" >"$prefix.curl.tsv" 2>"$prefix.curl-verbose.log" || echo "  curl exit $?" >&2
    else
      # (wget -d echoes its options to stderr before -o takes over: kept apart, shown on failure)
      ip netns exec "$NSC" env SSLKEYLOGFILE="$prefix.keylog" GNUTLS_KEYLOGFILE="$prefix.keylog" \
        timeout $((CLIENT_TIMEOUT_S + 10)) $ccl 2>"$prefix.stderr" || { echo "  wget exit $?" >&2; cat "$prefix.stderr" >&2; }
    fi
    t1=$(date +%s.%N)
    times+=("$t0 $t1")
    echo "  page load $i: $(python3 -c "print(f'{$t1 - $t0:.3f}')") s wall clock"
    [ "$i" = "$reps" ] || sleep "$IDLE_GAP_S"
  done
  sleep "$DRAIN_S"
  kill -INT "$cpid" "$spid"
  wait "$cpid" "$spid" || true
  if [ -n "$iperfc" ]; then
    kill -INT "$iperfc" 2>/dev/null || true
    wait "$iperfc" || true
    sleep 0.5
    kill -INT "$iperfs" 2>/dev/null || true
    wait "$iperfs" || true
  fi
  kill "$srvpid" "$dnspid" 2>/dev/null || true
  wait "$srvpid" "$dnspid" 2>/dev/null || true
  in_r tc -s qdisc show >"$WORK/qdisc-stats.txt"
  testbed_down
  rm -rf "$NETNS_ETC"

  # keep: captures, each page load's client output (paths made relative), keylogs (TLS only)
  mv "$WORK/$cfile" "$WORK/$sfile" "$CAPS/"
  local stem head
  for i in $(seq "$reps"); do
    prefix=$WORK/$name.$i
    stem=$name.$i
    [ "$reps" = 1 ] && stem=$name
    # each output starts with the exact command (the same as run, file names relative) and the
    # wall clock (date +%s.%N) just before and after the client process
    head="# command: $(client_command "$client" "$server" "$stem")
# t_before: ${times[$((i - 1))]% *}  t_after: ${times[$((i - 1))]#* }"
    local out=$CAPS/$stem
    if [ "$client" = curl ]; then
      { echo "$head"; (IFS=$'\t'; echo "${CURL_FIELDS[*]}"); cat "$prefix.curl.tsv"; } >"$out.curl-w.tsv"
      { echo "$head"; cat "$prefix.curl-verbose.log"; } >"$out.curl-verbose.log"
    else
      { echo "$head"; sed "s|$WORK/$name.$i|$stem|g" "$prefix.log"; } >"$out.wget.log"
    fi
    if [ -s "$prefix.keylog" ]; then cp "$prefix.keylog" "$out.keylog"; fi
  done
  chmod 644 "$CAPS/$name"[._]*

  # scenario facts for tools/summarize.py (one JSON object per line)
  local cmds=()
  for i in $(seq "$reps"); do cmds+=("$(client_command "$client" "$server" "$name.$i")"); done
  python3 - "$CAPS/scenarios.jsonl" "$WORK" "${times[@]}" -- "${cmds[@]}" <<EOF
import json, os, sys
work = sys.argv[2]
sep = sys.argv.index("--")
times = [tuple(float(x) for x in t.split()) for t in sys.argv[3:sep]]
cmds = sys.argv[sep + 1:]
def read(name):
    p = os.path.join(work, name)
    return open(p).read().splitlines() if os.path.exists(p) else None
def bulk():
    # iperf3 -J (client = the bulk sender): per-interval throughput while the pages loaded
    path = os.path.join(work, "iperf.json")
    if not os.path.exists(path):
        return None
    try:
        run = json.load(open(path))
    except ValueError:
        return {"error": "iperf3 wrote no JSON", "stderr": read("iperf.err")}
    t_load = float(open(os.path.join(work, "load-start.txt")).read())
    lo, hi = times[0][0] - t_load, times[-1][1] - t_load
    during = [i["sum"]["bits_per_second"] for i in run.get("intervals", [])
              if i["sum"]["end"] > lo and i["sum"]["start"] < hi]
    end = run.get("end", {})
    snt = end.get("sum_sent", {})
    return {"direction": "$load", "flows": len(end.get("streams", [])) or None,
            "congestion_control": "cubic", "error": run.get("error"),
            "sent_bps_during_pages": round(sum(during) / len(during)) if during else None,
            "intervals_during_pages": len(during),
            "sent_bps_whole_run": round(snt["bits_per_second"]) if "bits_per_second" in snt else None,
            "retransmits_whole_run": snt.get("retransmits")}
reps = []
for i, ((t0, t1), cmd) in enumerate(zip(times, cmds), 1):
    stem = "$name" if len(times) == 1 else f"$name.{i}"
    r = {"index": i, "t_before": round(t0, 6), "t_after": round(t1, 6),
         "wall_clock_s": round(t1 - t0, 6), "client_command": cmd.replace(f"$name.{i}", stem)}
    if "$client" == "curl":
        r["curl_output"] = stem + ".curl-w.tsv"
        r["curl_verbose_log"] = stem + ".curl-verbose.log"
    else:
        r["wget_log"] = stem + ".wget.log"
    if os.path.exists(os.path.join(sys.argv[1][: -len("scenarios.jsonl")], stem + ".keylog")):
        r["keylog"] = stem + ".keylog"
    reps.append(r)
d = {
  "scenario": "$name", "server": "$server", "server_command": "$scmd".replace("$TOOLS/", "tools/").replace("$WORK/", ""),
  "protocol": "HTTP/1.1" if "$server".endswith("11") else "HTTP/1.0",
  "tls": "$server".startswith("https"), "host": "$HOST", "server_ip": "$SERVER_IP", "port": $(port_of "$server"),
  "client": "$client", "client_ip": "$CLIENT_IP", "name_lookup": "$dns", "page_loads": reps,
  "realtime_minus_monotonic_s": $clock_offset,
  "load": "$load", "bulk_tcp": bulk(), "buffer_packets": $buf, "queue_unit": "$queue",
  "uplink_rate": "$UP_RATE", "downlink_rate": "$DOWN_RATE",
  "qdisc": read("qdisc.txt"), "qdisc_stats_at_end": read("qdisc-stats.txt"),
  "server_route": read("route.txt"), "server_sysctl": read("sysctl.txt"),
  "client_capture": "$cfile", "client_capture_command": "$ccmd",
  "server_capture": "$sfile", "server_capture_command": "$sscmd",
}
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(d) + "\n")
EOF
}

make_pages() {
  [ -e "$SITE/img2.jpg" ] || { echo "no $SITE: run '$0 site' first" >&2; return 1; }
  mkdir -p "$CAPS"
  touch -d 2014-11-05T12:00:00Z "$SITE"/*   # Last-Modified: the same in every run and checkout
  make_cert
  local want=("$@") line name fields
  if [ ${#want[@]} -eq 0 ]; then rm -f "$CAPS/scenarios.jsonl"; fi
  for line in "${SCENARIOS[@]}"; do
    read -ra fields <<<"$line"
    name=${fields[0]}
    if [ ${#want[@]} -gt 0 ]; then
      [[ " ${want[*]} " == *" $name "* ]] || continue
      if [ -e "$CAPS/scenarios.jsonl" ]; then
        grep -v "\"scenario\": \"$name\"" "$CAPS/scenarios.jsonl" >"$WORK/s.jsonl" || true
        mv "$WORK/s.jsonl" "$CAPS/scenarios.jsonl"
      fi
    fi
    run_scenario "${fields[@]}"
  done
}

# ---------------------------------------------------------------------------------------------
# What tshark says about each capture
# ---------------------------------------------------------------------------------------------
# Outputs next to <cap> = <scenario>_client.pcap (all in captures/, each starts with the command):
#   <cap>.tshark-http-requests.tsv   one row per HTTP request (TLS captures: decrypted with the
#                                    client's keylog, -o tls.keylog_file:...)
#   <cap>.tshark-http-responses.tsv  one row per HTTP response, at the frame that completes it
#   <cap>.tshark-http-tree.txt       tshark -q -z http,tree
#   <cap>.tshark-tcp-analysis.tsv    every frame tshark's TCP analysis flags (retransmissions ...)
#   <cap>.tshark-tcp-streams.tsv     per TCP stream: frames, bytes, tshark's retransmission counts,
#                                    initial RTT, ACK RTT (summed up from per-frame fields)
#   <cap>.tshark-dns.tsv             DNS queries and responses
#   <cap>.tshark-tls.tsv             TLS ClientHello/ServerHello: server name, versions
make_stats() {
  local f name ver keylog cmd
  ver=$(tshark --version 2>/dev/null | head -n 1)
  cd "$CAPS"
  shopt -s nullglob
  for f in *_client.pcap; do
    name=${f%_client.pcap}
    echo "-- $f"
    keylog=
    # TLS: the page's HTTP decrypted with the client's keylog(s) (all page loads of the capture)
    local logs=() k
    for k in "$name".keylog "$name".[0-9].keylog; do [ -e "$k" ] && logs+=("$k"); done
    if [ ${#logs[@]} -gt 0 ]; then
      cat "${logs[@]}" >"$WORK/$name.keys"
      keylog="-o tls.keylog_file:$WORK/$name.keys"
    fi
    local kl=${keylog:+ -o tls.keylog_file:$(IFS=+; echo "${logs[*]}")}
    tshark_out() {  # $1 output file, rest: tshark arguments (recorded with the keylog names)
      local out=$1
      shift
      { echo "# command: tshark$kl $*"; echo "# tshark: $ver"; tshark $keylog "$@" 2>"$WORK/tshark.err"; } >"$out" \
        || { echo "tshark failed: $*" >&2; cat "$WORK/tshark.err" >&2; return 1; }
    }
    # -o tcp.reassemble_out_of_order:TRUE: else tshark 4.0 loses every response with a segment
    # lost and retransmitted at the bottleneck (its reassembly stops at the hole)
    local ooo="-o tcp.reassemble_out_of_order:TRUE"
    tshark_out "$f.tshark-http-requests.tsv" $ooo -r "$f" -Y http.request -T fields -E header=y \
      -e frame.number -e frame.time_epoch -e tcp.stream -e http.request.method -e http.host \
      -e http.request.uri -e http.request.version -e http.referer -e http.user_agent
    tshark_out "$f.tshark-http-responses.tsv" $ooo -r "$f" -Y http.response -T fields -E header=y \
      -e frame.number -e frame.time_epoch -e tcp.stream -e http.response.version -e http.response.code \
      -e http.content_length -e http.transfer_encoding -e http.time -e http.request_in \
      -e http.response_for.uri -e tcp.reassembled.length -e http.content_length_header -e http.chunk_size
    tshark_out "$f.tshark-http-tree.txt" $ooo -q -r "$f" -z http,tree
    tshark_out "$f.tshark-tcp-analysis.tsv" -r "$f" -Y tcp.analysis.flags -T fields -E header=y \
      -e frame.number -e frame.time_epoch -e tcp.stream -e ip.src -e tcp.srcport -e tcp.seq -e tcp.len \
      -e tcp.flags -e tcp.analysis.retransmission -e tcp.analysis.fast_retransmission \
      -e tcp.analysis.spurious_retransmission -e _ws.expert.message
    tshark_out "$f.tshark-dns.tsv" -r "$f" -Y dns -T fields -E header=y -e frame.number -e frame.time_epoch \
      -e dns.id -e dns.flags.response -e dns.qry.name -e dns.qry.type -e dns.flags.rcode -e dns.a -e dns.time
    tshark_out "$f.tshark-tls.tsv" $ooo -r "$f" -Y "tls.handshake.type == 1 || tls.handshake.type == 2" \
      -T fields -E header=y -e frame.number -e frame.time_epoch -e tcp.stream -e tls.handshake.type \
      -e tls.handshake.extensions_server_name -e tls.handshake.version -e tls.handshake.extensions.supported_version
    [ -n "$keylog" ] || [ "$(grep -vc '^#' "$f.tshark-tls.tsv")" -gt 1 ] || rm -f "$f.tshark-tls.tsv"
    # per-stream TCP summary from per-frame fields (the fields command is recorded in the file)
    cmd="tshark -r $f -Y tcp -T fields -e tcp.stream -e frame.time_epoch -e ip.src -e tcp.srcport -e tcp.dstport -e tcp.len -e tcp.flags.syn -e tcp.flags.fin -e tcp.flags.reset -e tcp.analysis.retransmission -e tcp.analysis.fast_retransmission -e tcp.analysis.spurious_retransmission -e tcp.analysis.out_of_order -e tcp.analysis.lost_segment -e tcp.analysis.duplicate_ack -e tcp.analysis.ack_rtt -e tcp.analysis.initial_rtt"
    $cmd 2>/dev/null | python3 "$TOOLS/tcp_streams.py" "$CLIENT_IP" "# command: $cmd | python3 tools/tcp_streams.py $CLIENT_IP" "# tshark: $ver" \
      >"$f.tshark-tcp-streams.tsv"
  done
  cd "$HERE"
  python3 "$TOOLS/summarize.py" "$HERE" >"$HERE/measured.md"
  echo "wrote $HERE/measured.md and $CAPS/manifest.json"
}

stage=${1:-all}
shift || true
case $stage in
  site) make_site ;;
  pages) make_pages "$@" ;;
  stats) make_stats ;;
  all) make_site; make_pages "$@"; make_stats ;;
  *) echo "usage: $0 [site|pages|stats|all] [SCENARIO...]" >&2; exit 2 ;;
esac
