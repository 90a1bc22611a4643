#!/usr/bin/env bash
# Make the HTTP/3 sample in data/web/tls/: quic_pair.py (aioquic's QUIC + HTTP/3 API) serving the
# seed paper's page (data/web/site/) on loopback in a namespace of its own, and its client
# fetching the four objects, a 404 and a HEAD on one QUIC v1 connection, captured by tcpdump;
# the client writes the NSS key log (QUIC_* ... lines are CLIENT_/SERVER_HANDSHAKE_TRAFFIC_SECRET
# and CLIENT_/SERVER_TRAFFIC_SECRET_0). Then tshark 4.0's decrypted view (it has no QPACK:
# the frames and stream ids, not the header fields). And quic-h3-unused: a client that shakes
# hands and closes without a request (a connection opened ahead, as browsers preconnect), and
# 50 ms later one that fetches index.html and style.css, from the same address. And quic-h3-v1v2:
# a client that begins in QUIC version 1 and offers version 2 first, which the server switches to
# (RFC 9368 compatible version negotiation; the connection is then in version 2, RFC 9369), and
# quic-h3-v2v1: a client that begins in version 2 with a server of version 1 only, whose
# Version Negotiation packet makes it begin again in version 1 (RFC 9000 §6).
# And quic-h3-rebind: a client whose datagrams come from a new port half way, with the same
# connection ID (a NAT's rebinding, RFC 9000 §9.3, as a capture beyond the NAT shows it).
# And quic-h3-retry: a server that answers each client's first Initial with a Retry packet (RFC 9000
# §8.1.2, §17.2.5: address validation); the client begins again with the token and the server's
# new connection ID, whose Initial keys differ (RFC 9001 §5.2).
# Usage (as root, with the venv's python holding aioquic): data/web/tls/make_quic.sh [PYTHON [all|unused|v2|rebind|retry]]
set -euo pipefail
export LC_ALL=C TZ=UTC
HERE=$(cd "$(dirname "$0")" && pwd)
SITE=$(cd "$HERE/../site" && pwd)
PY=${1:-python3}
WHAT=${2:-all}
WORK=$(mktemp -d /tmp/wx-quic.XXXXXX)
NS=wxquic$$
cleanup() { ip netns pids $NS 2>/dev/null | xargs -r kill 2>/dev/null || true; ip netns del $NS 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
ip netns add $NS
ip -n $NS link set lo up
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" \
  -days 30 -subj /CN=www.example.com -addext subjectAltName=DNS:www.example.com 2>/dev/null
ip netns exec $NS timeout 60 "$PY" "$HERE/quic_pair.py" server "$SITE" "$WORK/cert.pem" "$WORK/key.pem" 4433 &
ip netns exec $NS timeout 60 "$PY" "$HERE/quic_pair.py" server "$SITE" "$WORK/cert.pem" "$WORK/key.pem" 4434 v1-only &
ip netns exec $NS timeout 60 "$PY" "$HERE/quic_pair.py" server "$SITE" "$WORK/cert.pem" "$WORK/key.pem" 4435 retry &
sleep 2
capture() {  # name, then what runs while tcpdump captures (PORT: the server's, default 4433)
  local name=$1; shift
  rm -f "$HERE/$name.keylog"
  ip netns exec $NS tcpdump -i lo -s 0 -B 16384 --immediate-mode -w "$WORK/$name.pcap" udp port "${PORT:-4433}" 2>"$WORK/$name.tcpdump.log" &
  local tpid=$!
  sleep 1
  "$@"
  sleep 1
  kill $tpid; wait $tpid 2>/dev/null || true  # tcpdump writes its last buffer on exit
  grep "dropped by kernel" "$WORK/$name.tcpdump.log" || true  # (0: every packet written)
  editcap -F pcapng "$WORK/$name.pcap" "$HERE/$name.pcapng"
  local T=(tshark -n -o "tls.keylog_file:$HERE/$name.keylog" -r "$HERE/$name.pcapng")
  "${T[@]}" -Y http3 -T fields -e frame.time_epoch -e quic.stream.stream_id -e http3.frame_type -E occurrence=a >"$HERE/$name.tshark-http3.tsv"
  "${T[@]}" -Y quic -T fields -e frame.time_epoch -e quic.long.packet_type -e quic.packet_number -e quic.frame_type -E occurrence=a >"$HERE/$name.tshark-quic.tsv"
  ls -la "$HERE"/$name.*
}
client() {  # key log, paths...: quic_pair.py's client in the namespace
  ip netns exec $NS timeout 20 "$PY" "$HERE/quic_pair.py" client "${PORT:-4433}" "$@"
}
if [ "$WHAT" = all ]; then
  capture quic-h3 eval 'client "$HERE/quic-h3.keylog" /index.html /style.css /img1.jpg /img2.jpg /missing.png \
    "HEAD /index.html" >"$HERE/quic-h3.client.tsv"'
fi
if [ "$WHAT" = all ] || [ "$WHAT" = v2 ]; then
  # compatible version negotiation (RFC 9368): the client's first flight in QUIC version 1, the
  # server answers in version 2 (RFC 9369), which the rest of the connection is in
  capture quic-h3-v1v2 eval 'client "$HERE/quic-h3-v1v2.keylog" --negotiate-v2 /index.html /style.css /img1.jpg \
    >"$HERE/quic-h3-v1v2.client.tsv"'
  # Version Negotiation (RFC 9000 §6): the client's first flight in version 2 to a server of
  # version 1 only, which lists 1; the client begins again in 1 on the same addresses and ports
  PORT=4434 capture quic-h3-v2v1 eval 'client "$HERE/quic-h3-v2v1.keylog" --v2-then-v1 /index.html /style.css \
    >"$HERE/quic-h3-v2v1.client.tsv"'
fi
if [ "$WHAT" = all ] || [ "$WHAT" = rebind ]; then
  # a NAT's rebinding as a capture beyond it shows it (RFC 9000 §9.3): after two responses the
  # client's datagrams come from a new port with the same connection ID; the server follows
  capture quic-h3-rebind eval 'client "$HERE/quic-h3-rebind.keylog" --rebind-after=2 /index.html /style.css \
    /img1.jpg /img2.jpg >"$HERE/quic-h3-rebind.client.tsv"'
fi
if [ "$WHAT" = all ] || [ "$WHAT" = retry ]; then
  # address validation (RFC 9000 §8.1.2): the server's Retry, the client's second first flight
  PORT=4435 capture quic-h3-retry eval 'client "$HERE/quic-h3-retry.keylog" /index.html /style.css /img1.jpg \
    >"$HERE/quic-h3-retry.client.tsv"'
fi
[ "$WHAT" = v2 ] || [ "$WHAT" = rebind ] || [ "$WHAT" = retry ] && exit 0
capture quic-h3-unused eval '{ client "$HERE/quic-h3-unused.keylog" & sleep 0.05;
  client "$HERE/quic-h3-unused.keylog" /index.html /style.css; wait $!; } >"$HERE/quic-h3-unused.client.tsv"'
