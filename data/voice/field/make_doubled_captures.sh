#!/usr/bin/env bash
# Captures holding every packet twice (issue 11, point 3), made with real tools: ffmpeg's RTP muxer
# sends from a client namespace through a router namespace to a server namespace, and tcpdump in
# the router sees each datagram twice: `-i any` takes it in on rc0 and out on rs0 (Linux cooked
# capture, SLL2 by default, SLL with -y LINUX_SLL); a span port mirroring both router ports sees
# it twice on Ethernet (here: the captures of rc0 and of rs0 merged by mergecap; this kernel has
# no tc mirred). A second tcpdump on rc0 alone, in the same run, gives the undoubled twin: its
# packets are the first copies of the `any` capture, with the same timestamps.
#
# Usage (as root, from anywhere):  data/voice/field/make_doubled_captures.sh
# Needs: ip (iproute2), tc (tbf), tcpdump (4.99), ffmpeg (5.1), tshark and mergecap (4.0). About
# 15 s. Real timing and a real queue: captures differ from run to run; the committed
# .tshark-rtp-streams.txt describe the committed captures. Namespaces rtpdup-{c,r,s}, addresses
# of RFC 5737's documentation ranges, deleted on exit.
#
#   doubled_any.pcap       `tcpdump -i any` (LINUX_SLL2) in the router: 4 s of
#                          speech/en_us_male_8k.wav as G.711 A-law, 20 ms packets, no SIP/SDP;
#                          a tbf at the client queues and drops a few packets (lost in both copies).
#   doubled_any_twin.pcap  the same run on rc0 only (Ethernet): each packet once.
#   doubled_sll.pcap       `tcpdump -i any -y LINUX_SLL` (cooked v1): 1 s of the same speech.
#   doubled_span.pcap      the same run as a span port sees it (Ethernet): rc0 and rs0 merged.
#   doubled_video.pcap     `tcpdump -i any` (LINUX_SLL2): 2 s of testsrc 176x144 at 10 fps, H.264
#                          (libx264) as RTP/MPEG-TS (PT 33); twin doubled_video_twin.pcap on rc0.
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "$0")" && pwd)
SPEECH="$HERE/../speech/en_us_male_8k.wav"
WORK=$(mktemp -d /tmp/qoe-doubled.XXXXXX)
NSC=rtpdup-c NSR=rtpdup-r NSS=rtpdup-s
CLIENT_IP=192.0.2.2 ROUTER_C_IP=192.0.2.1 ROUTER_S_IP=198.51.100.1 SERVER_IP=198.51.100.2
TDS=()
in_c() { ip netns exec "$NSC" "$@"; }
in_r() { ip netns exec "$NSR" "$@"; }
cleanup() {
  local p
  for p in "${TDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for ns in "$NSC" "$NSR" "$NSS"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

for ns in "$NSC" "$NSR" "$NSS"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip link add c0 netns "$NSC" type veth peer name rc0 netns "$NSR"
ip link add s0 netns "$NSS" type veth peer name rs0 netns "$NSR"
for l in "$NSC c0" "$NSR rc0" "$NSR rs0" "$NSS s0"; do set -- $l; ip -n "$1" link set "$2" up; done
ip -n "$NSC" addr add $CLIENT_IP/24 dev c0
ip -n "$NSR" addr add $ROUTER_C_IP/24 dev rc0
ip -n "$NSR" addr add $ROUTER_S_IP/24 dev rs0
ip -n "$NSS" addr add $SERVER_IP/24 dev s0
ip -n "$NSC" route add default via $ROUTER_C_IP
ip -n "$NSS" route add default via $ROUTER_S_IP
in_r sysctl -qw net.ipv4.ip_forward=1

capture() {  # $1 = output, $2 = interface, rest = tcpdump options before the filter
  local out=$1 dev=$2
  shift 2
  # `ip netns exec` forks: the shell that execs tcpdump writes its own pid, the one to stop
  in_r sh -c 'echo $$ > "$0.pid"; exec tcpdump "$@"' "$WORK/$out" -i "$dev" --immediate-mode -B 8192 -U "$@" -w "$WORK/$out" \
    "udp and dst host $SERVER_IP" >/dev/null 2>&1 &
  sleep 0.2
  TDS+=("$(cat "$WORK/$out.pid")")
}
stop_captures() {
  sleep 0.5
  local p
  for p in "${TDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait
  TDS=()
}
send_speech() {  # $1 = seconds, $2 = port: G.711 A-law, 160 samples (20 ms) per packet
  # the file read through lavfi in frames of 160 samples, so that -re paces every packet
  in_c ffmpeg -hide_banner -loglevel error -re -f lavfi -i "amovie=$SPEECH,asetnsamples=n=160:p=0" -t "$1" \
    -c:a pcm_alaw -f rtp "rtp://$SERVER_IP:$2" >/dev/null
}

# -- run A: `any` doubles, rc0 alone is the twin; a tbf at the client a little slower than the
# stream (50 frames of 214 bytes a second = 85.6 kbit/s) queues and drops a few packets -------------
in_c tc qdisc add dev c0 root tbf rate 82kbit burst 642 limit 642
capture doubled_any.pcap any
capture doubled_any_twin.pcap rc0
sleep 1
send_speech 4 41000
stop_captures
in_c tc qdisc del dev c0 root

# -- run B: cooked capture v1 on `any`; a span port's view, two port captures merged ----------------
capture doubled_sll.pcap any -y LINUX_SLL
capture rc0.pcap rc0
capture rs0.pcap rs0
sleep 1
send_speech 1 41010
stop_captures
mergecap -F pcap -w "$WORK/doubled_span.pcap" "$WORK/rc0.pcap" "$WORK/rs0.pcap"

# -- run C: video, `any` doubles, rc0 alone is the twin --------------------------------------------
capture doubled_video.pcap any
capture doubled_video_twin.pcap rc0
sleep 1
in_c ffmpeg -hide_banner -loglevel error -re -f lavfi -i "testsrc=size=176x144:rate=10" -t 2 \
  -c:v libx264 -preset veryfast -g 10 -bf 0 -pix_fmt yuv420p -f rtp_mpegts "rtp://$SERVER_IP:41020" >/dev/null
stop_captures

cd "$HERE"
for f in doubled_any.pcap doubled_any_twin.pcap doubled_sll.pcap doubled_span.pcap doubled_video.pcap doubled_video_twin.pcap; do
  cp "$WORK/$f" "$f"
  cmd="tshark -q -o rtp.heuristic_rtp:TRUE -z rtp,streams -r $f"
  { echo "# command: $cmd"; echo "# $(tshark -v | head -1)"; $cmd; } > "$f.tshark-rtp-streams.txt"
  cat "$f.tshark-rtp-streams.txt"
done
