#!/usr/bin/env bash
# SRTP captures (issue 11 point 4), made with real tools on the loopback: SIP with SDES keys sent by
# sdes_call.py (stdlib Python), SRTP and RTP by ffmpeg's RTP muxer through its srtp:// protocol
# (FFmpeg's own SRTP code, libavformat/srtp.c: independent of libsrtp, which qoe decrypts with),
# captured by tcpdump; then tshark's RTP stream table of each (header statistics: tshark does not
# decrypt SRTP) and FFmpeg's decode of each A-law stream (md5 of the PCM, `ffmpeg -f md5`).
#
# Usage (as root, from anywhere):  data/voice/srtp/make_srtp_captures.sh
# Needs: iproute2 (a network namespace), tcpdump, ffmpeg (5.1), tshark (4.0), python3. About 15 s. Real timing: the captures differ
# from run to run; the committed .txt files describe the committed captures.
#
#   srtp_call.pcap   INVITE/200/ACK whose SDPs are RTP/SAVP with a=crypto (see sdes_call.py), then
#                    3 s of PCMA each way, 20 ms packets: caller 127.0.0.1:40000 -> 127.0.0.2:40002
#                    (en_gb_female, AES_CM_128_HMAC_SHA1_32 with the offer's tag-2 key A32, first
#                    sequence number 65400 so that it wraps past 65535 after 136 packets: the
#                    rollover counter becomes 1) and callee -> caller (de_male, _32 with the
#                    answer's key B32); FFmpeg also sends SRTCP sender reports; then BYE.
#   srtp_nosdp.pcap  no signalling: 3 s of en_gb_female as PCMA, AES_CM_128_HMAC_SHA1_80 with key C80,
#                    127.0.0.1:40020 -> 127.0.0.2:40022 (found by the RTP heuristic, recognised as
#                    SRTP by the payload heuristic; decrypted only with a key the user gives).
#   plain.pcap       the plain-RTP twin of srtp_nosdp.pcap: the same audio as PCMA, no encryption,
#                    127.0.0.1:40010 -> 127.0.0.2:40012.
# The keys are printed by `python3 sdes_call.py keys` (test keys from fixed strings).
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "$0")" && pwd)
# Run in a network namespace of its own, whose loopback nothing else uses (other tools' SIP on
# 127.0.0.1:5060 would land in the captures otherwise).
if [ -z "${QOE_SRTP_NETNS:-}" ]; then
  NS=srtp-cap-$$
  ip netns add "$NS"
  trap 'ip netns del "$NS"' EXIT
  ip netns exec "$NS" ip link set lo up
  QOE_SRTP_NETNS=$NS ip netns exec "$NS" "$HERE/$(basename "$0")"
  exit
fi
SPEECH="$HERE/../speech"
WORK=$(mktemp -d /tmp/qoe-srtp.XXXXXX)
TD=""
cleanup() { [ -n "$TD" ] && kill "$TD" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
eval "$(python3 "$HERE/sdes_call.py" keys)"

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
# $1 = speech file, $2 = URL, then extra ffmpeg options: 3 s of A-law, 160 samples (20 ms) per packet
send_pcma() {
  local wav=$1 url=$2; shift 2
  ffmpeg -hide_banner -loglevel error -re -i "$wav" -t 3 -ac 1 -ar 8000 -af "asetnsamples=n=160:p=0" \
    -c:a pcm_alaw -payload_type 8 "$@" -f rtp "$url" >/dev/null
}

capture_start srtp_call.pcap "udp and (port 5060 or portrange 40000-40003)"
python3 "$HERE/sdes_call.py" invite srtp-call
send_pcma "$SPEECH/en_gb_female_8k.wav" "srtp://127.0.0.2:40002?localaddr=127.0.0.1&localrtpport=40000" \
  -seq 65400 -ssrc 287454020 -srtp_out_suite AES_CM_128_HMAC_SHA1_32 -srtp_out_params "$A32" &
S1=$!
send_pcma "$SPEECH/de_male_8k.wav" "srtp://127.0.0.1:40000?localaddr=127.0.0.2&localrtpport=40002" \
  -seq 1000 -ssrc 572662306 -srtp_out_suite AES_CM_128_HMAC_SHA1_32 -srtp_out_params "$B32" &
S2=$!
wait $S1 $S2
python3 "$HERE/sdes_call.py" bye srtp-call
capture_stop srtp_call.pcap

capture_start srtp_nosdp.pcap "udp and portrange 40020-40023"
send_pcma "$SPEECH/en_gb_female_8k.wav" "srtp://127.0.0.2:40022?localaddr=127.0.0.1&localrtpport=40020" \
  -seq 100 -ssrc 858993459 -srtp_out_suite AES_CM_128_HMAC_SHA1_80 -srtp_out_params "$C80"
capture_stop srtp_nosdp.pcap

capture_start plain.pcap "udp and portrange 40010-40013"
send_pcma "$SPEECH/en_gb_female_8k.wav" "rtp://127.0.0.2:40012?localaddr=127.0.0.1&localrtpport=40010" \
  -seq 100 -ssrc 858993459
capture_stop plain.pcap

cd "$HERE"
for f in srtp_call.pcap srtp_nosdp.pcap plain.pcap; do
  cmd="tshark -q -o rtp.heuristic_rtp:TRUE -z rtp,streams -r $f"
  { echo "# command: $cmd"; echo "# $(tshark -v | head -1)"; $cmd; } > "$f.tshark-rtp-streams.txt"
  cat "$f.tshark-rtp-streams.txt"
done
