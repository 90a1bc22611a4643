#!/usr/bin/env bash
# Make quic-0rtt.pcapng: aioquic's HTTP/3 client resuming a session and sending its request as QUIC
# 0-RTT (quic_0rtt.py), against aioquic's server, on loopback in a namespace of its own (qic-q0).
# The client's NSS key log (quic-0rtt.keylog) holds both connections' secrets, the second's
# CLIENT_EARLY_TRAFFIC_SECRET included; quic-0rtt.client.tsv is what the client fetched (path,
# status, body bytes, early data accepted). Then tshark 4.0's view of the packets.
# With "rejected" after PYTHON it makes quic-0rtt-rejected.pcapng instead: the server finds no
# ticket it is shown (quic_0rtt.py server ... reject), so it rejects the 0-RTT data and the client
# sends its request again in 1-RTT packets.
# Usage (as root, with the venv's python holding aioquic): data/web/tls/make_quic_0rtt.sh [PYTHON [rejected]]
set -euo pipefail
export LC_ALL=C TZ=UTC
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${1:-python3}
WORK=$(mktemp -d /tmp/qic-q0.XXXXXX)
NS=qic-q0
cleanup() { ip netns pids $NS 2>/dev/null | xargs -r kill 2>/dev/null || true; ip netns del $NS 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
ip netns add $NS
ip -n $NS link set lo up
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" \
  -days 30 -subj /CN=www.example.com -addext subjectAltName=DNS:www.example.com 2>/dev/null
name=quic-0rtt
mode=
if [ "${2:-}" = rejected ]; then name=quic-0rtt-rejected; mode=reject; fi
rm -f "$HERE/$name.keylog"
ip netns exec $NS timeout 30 "$PY" "$HERE/quic_0rtt.py" server "$WORK/cert.pem" "$WORK/key.pem" 4433 $mode &
ip netns exec $NS tcpdump -i lo -s 0 --immediate-mode -w "$WORK/$name.pcap" udp port 4433 2>/dev/null &
TPID=$!
sleep 2
ip netns exec $NS timeout 20 "$PY" "$HERE/quic_0rtt.py" client 4433 "$HERE/$name.keylog" >"$HERE/$name.client.tsv"
sleep 1
kill $TPID; wait $TPID 2>/dev/null || true
editcap -F pcapng "$WORK/$name.pcap" "$HERE/$name.pcapng"  # (as quic-h3: the TCP samples are the .pcap files)
tshark -n -o "tls.keylog_file:$HERE/$name.keylog" -r "$HERE/$name.pcapng" -Y quic -T fields -e frame.time_epoch \
  -e udp.srcport -e quic.long.packet_type -e quic.packet_number -e quic.frame_type -E occurrence=a >"$HERE/$name.tshark-quic.tsv"
ls -la "$HERE"/$name*
