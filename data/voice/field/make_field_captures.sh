#!/usr/bin/env bash
# Crafted "voice from the field" captures (issue 11, points 1 and 2), made with real tools on the
# loopback: SIP text sent by send.py (stdlib Python), RTP by ffmpeg's RTP muxer (L16) or send.py
# (PCMU + RFC 4733 events), captured by tcpdump; then tshark's RTP stream table of each.
#
# Usage (as root, from anywhere):  data/voice/field/make_field_captures.sh
# Needs: tcpdump, ffmpeg (5.1), tshark (4.0), python3. About 15 s. Real timing: the captures
# differ from run to run; the committed .tshark-rtp-streams.txt describe the committed captures.
#
#   reused_port.pcap  four streams to the same 127.0.0.1:40000, payload type 99 = L16 mono at
#                     8000, 16000, 32000 then 48000 Hz: calls "field-a" (8 kHz), "field-b"
#                     (16 kHz), "field-c" (32 kHz), then a re-INVITE of "field-c" (CSeq 2) that
#                     moves it to 48 kHz. Each SDP exchange, then 1 s of a 440 Hz sine (20 ms packets).
#   dtmf.pcap         one call, SDP "RTP/AVP 0 101" with "a=rtpmap:101 telephone-event/8000";
#                     150 PCMU packets of 20 ms with two DTMF events in the same SSRC (see send.py).
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d /tmp/qoe-field.XXXXXX)
TD=""
cleanup() { [ -n "$TD" ] && kill "$TD" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

capture_start() {  # $1 = output, $2 = filter
  tcpdump -i lo -U -w "$WORK/$1" "$2" >/dev/null 2>&1 &
  TD=$!
  sleep 1
}
capture_stop() {  # $1 = output
  sleep 0.5
  kill "$TD"; wait "$TD" 2>/dev/null || true; TD=""
  cp "$WORK/$1" "$HERE/$1"
}

# -- point 1: sequential calls reusing one port --------------------------------------------------
capture_start reused_port.pcap "udp and (port 5060 or port 40000 or port 40001)"
send_l16() {  # $1 = clock rate: 1 s of sine, 20 ms per packet (rate/50 samples), PT 99
  ffmpeg -hide_banner -loglevel error -re -f lavfi -i "sine=f=440:r=$1" -t 1 -ac 1 \
    -af "asetnsamples=n=$(($1 / 50)):p=0" -c:a pcm_s16be -payload_type 99 -pkt_size 2000 \
    -f rtp rtp://127.0.0.1:40000 >/dev/null
}
python3 "$HERE/send.py" sip field-a 1 8000 40000;  send_l16 8000;  python3 "$HERE/send.py" bye field-a 2
python3 "$HERE/send.py" sip field-b 1 16000 40000; send_l16 16000; python3 "$HERE/send.py" bye field-b 2
python3 "$HERE/send.py" sip field-c 1 32000 40000; send_l16 32000
python3 "$HERE/send.py" sip field-c 2 48000 40000; send_l16 48000; python3 "$HERE/send.py" bye field-c 3
capture_stop reused_port.pcap

# -- point 2: RFC 4733 telephone-event packets inside the audio stream ----------------------------
capture_start dtmf.pcap "udp and (port 5060 or port 40010)"
python3 "$HERE/send.py" sip field-dtmf 1 dtmf 40010
python3 "$HERE/send.py" dtmf 40010 11
python3 "$HERE/send.py" bye field-dtmf 2
capture_stop dtmf.pcap

cd "$HERE"
for f in reused_port.pcap dtmf.pcap; do
  cmd="tshark -q -o rtp.heuristic_rtp:TRUE -z rtp,streams -r $f"
  { echo "# command: $cmd"; echo "# $(tshark -v | head -1)"; $cmd; } > "$f.tshark-rtp-streams.txt"
  cat "$f.tshark-rtp-streams.txt"
done
