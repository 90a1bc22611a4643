#!/usr/bin/env bash
# Captures of RTP voice in every common codec (issue 11, points 5 and 6), made with real encoders
# on the loopback, each with three packets lost on the way (a burst of two and a single one).
#
# Usage (as root, from anywhere):  data/voice/codecs/make_codec_captures.sh [SECTION ...]
#   SECTION: g722 g726 gsm g723 g729 l16 l16s44 opus speex amr amrwb ilbc (default: all of them); only the
#   captures of the sections named are made again (and their tshark tables).
# Needs: tcpdump, ffmpeg (5.1, with libgsm, libopus, libspeex), libbcg729 (Debian libbcg729-0),
# python3 with PyAV (the qoe venv: AMR-NB encoder libopencore_amrnb, which ffmpeg 5.1 lacks).
# INSTALLS (apt-get, section amrwb, when missing): libvo-amrwbenc0, the VisualOn AMR-WB encoder
# (neither ffmpeg 5.1 nor PyAV has an AMR-WB encoder); send.py drives it through ctypes.
# INSTALLS (section ilbc, when missing): maven and a JDK (apt-get), then libjitsi from Maven
# Central (mvn dependency:get, into ~/.m2): its Java port of the RFC 3951 iLBC encoder is the only
# iLBC encoder found for this machine (none in ffmpeg 5.1, PyAV, Debian or PyPI); IlbcEncode.java
# drives it.
# About 45 s. Real timing: the captures differ from run to run in their arrival times.
#
# For each codec NAME:
#   NAME.<ext>   the encoded speech the sender sent (first 2.5 s of en_us_male_*.wav; L16: 1.5 s, resampled
#                to 44.1 kHz stereo for l16_44k): the oracle.
#                The tests decode it with the ffmpeg command line and compare with qoe's audio.
#   NAME.pcap    the SIP INVITE announcing the stream (SDP as FFmpeg's RTP muxer writes it, or as
#                below), then the RTP packets as they arrived at 127.0.0.1:PORT.
# The sender (ffmpeg's RTP muxer, or send.py for what it does not packetise) sends to PORT+6000;
# send.py's relay forwards to PORT all but the packets of 0-based index 30, 31 and 70.
#
#   file            codec / SDP                             sender
#   g722            G.722, static PT 9 (clock 8000)          ffmpeg -c copy -f rtp, 160 B (20 ms)
#   g726le-16/32/40 G726-16/32/40 (RFC 3551 packing)         ffmpeg -c g726le -f rtp, 20 ms
#   g726-24         AAL2-G726-24 (I.366.2 packing)           ffmpeg -c g726 -f rtp, 20 ms
#   gsm             GSM, static PT 3                         send.py frames gsm (20 ms)
#   g723            G723, static PT 4                        send.py frames g723 (30 ms)
#   g729            G729, static PT 18, annexb=no            send.py frames g729 (bcg729, 20 ms)
#   l16             L16/16000/2                              ffmpeg -c pcm_s16be -f rtp, 20 ms
#   l16_44k         L16/44100/2, static PT 10 (no rtpmap)     ffmpeg -c pcm_s16be -f rtp, 1472-octet packets
#   l16_44k_dyn     L16/44100/2, PT 96 (a=rtpmap)             ffmpeg -c pcm_s16be -payload_type 96 -f rtp
#   opus_wb         opus/48000/2 (16 kHz input, wide-band)   ffmpeg -c copy -f rtp (libopus, 20 ms)
#   opus_nb         opus/48000/2 (8 kHz input, narrow-band)  ffmpeg -c copy -f rtp (libopus, 20 ms)
#   speex           speex/8000                               ffmpeg -c copy -f rtp (libspeex, 20 ms)
#   speex_wb        speex/16000 (wide-band)                  ffmpeg -c copy -f rtp (libspeex, 20 ms)
#   amr_oa          AMR/8000, octet-align=1 (RFC 4867 §4.4)  send.py frames amr oa (12.2 kbit/s)
#   amr_be          AMR/8000 bandwidth-efficient (§4.3)      send.py frames amr be (12.2 kbit/s)
#   amrwb_oa        AMR-WB/16000, octet-align=1 (§4.4)       send.py frames amrwb oa (VisualOn, 12.65 kbit/s)
#   amrwb_be        AMR-WB/16000 bandwidth-efficient (§4.3)  send.py frames amrwb be (VisualOn, 12.65 kbit/s)
#   ilbc20          iLBC/8000, mode=20 (RFC 3952 §5)         send.py frames ilbc (libjitsi, 38 octets / 20 ms)
#   ilbc30          iLBC/8000, mode=30                       send.py frames ilbc (libjitsi, 50 octets / 30 ms)
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "$0")" && pwd)
SPEECH="$HERE/../speech"
PY=${PY:-/work/main/.venv/bin/python}
WORK=$(mktemp -d /tmp/qoe-codecs.XXXXXX)
TD=""; RL=""
cleanup() { [ -n "$TD" ] && kill "$TD" 2>/dev/null; [ -n "$RL" ] && kill "$RL" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
FF="ffmpeg -hide_banner -loglevel error -y"
DROP="30,31,70"
ONLY=" $* "
want() { [ "$ONLY" = "  " ] || [[ "$ONLY" == *" $1 "* ]]; }  # is section $1 asked for
MADE=()

# $1 name, $2 port, $3 SDP file; then the sender command in the remaining args (it sends to port+6000)
capture() {
  local name=$1 port=$2 sdp=$3; shift 3
  tcpdump -i lo -U -w "$WORK/$name.pcap" "udp and (port 5060 or dst port $port)" >/dev/null 2>&1 &
  TD=$!
  sleep 1
  python3 "$HERE/send.py" sip "codecs-$name" "$port" "$sdp"
  python3 "$HERE/send.py" relay $((port + 6000)) "$port" "$DROP" 1.5 &
  RL=$!
  until ss -Hlun "sport = :$((port + 6000))" | grep -q .; do sleep 0.05; done  # the relay listens
  "$@"
  wait "$RL"; RL=""
  sleep 0.5
  kill "$TD"; wait "$TD" 2>/dev/null || true; TD=""
  cp "$WORK/$name.pcap" "$HERE/$name.pcap"
  MADE+=("$name.pcap")
}
# the SDP FFmpeg's RTP muxer writes for these output options (a dry run to a closed port)
sdp_of() {  # $1 out file, then ffmpeg input+output options
  local out=$1; shift
  $FF "$@" -t 0.1 -f rtp -sdp_file "$out" rtp://127.0.0.1:9 >/dev/null
}
sdp_static() {  # $1 out file, $2 m= formats, $3.. attribute lines
  local out=$1 fmt=$2; shift 2
  { echo "m=audio 9 RTP/AVP $fmt"; for a in "$@"; do echo "$a"; done; } > "$out"
}

S8="$SPEECH/en_us_male_8k.wav"; S16="$SPEECH/en_us_male_16k.wav"
cd "$HERE"

# -- G.722 ----------------------------------------------------------------------------------------
if want g722; then
  $FF -i "$S16" -t 2.5 -c:a g722 -f g722 g722.g722
  sdp_of "$WORK/g722.sdp" -f g722 -i g722.g722 -c:a copy
  capture g722 41000 "$WORK/g722.sdp" \
    $FF -re -f g722 -i g722.g722 -c:a copy -pkt_size 172 -f rtp rtp://127.0.0.1:47000
fi

# -- G.726 (RFC 3551 packing: FFmpeg's g726le; AAL2 packing: g726) --------------------------------
if want g726; then
  port=41010
  for spec in "g726le 16 2" "g726le 32 4" "g726le 40 5" "g726 24 3"; do
    set -- $spec; enc=$1; kbit=$2; bits=$3
    name="${enc}-${kbit}"
    $FF -i "$S8" -t 2.5 -c:a "$enc" -b:a "${kbit}k" -f "$enc" "$name.$enc"
    # the sender encodes again (G.726 is deterministic): FFmpeg 5.1's raw G.726 demuxer with -c copy
    # sent only part of the file
    sdp_of "$WORK/$name.sdp" -i "$S8" -c:a "$enc" -b:a "${kbit}k"
    capture "$name" "$port" "$WORK/$name.sdp" \
      $FF -re -i "$S8" -t 2.5 -c:a "$enc" -b:a "${kbit}k" -pkt_size $((12 + 20 * bits)) -f rtp "rtp://127.0.0.1:$((port + 6000))"
    port=$((port + 10))
  done
fi

# -- GSM, G.723.1 (FFmpeg 5.1's RTP muxer does not take them: send.py packetises) ----------------
if want gsm; then
  $FF -i "$S8" -t 2.5 -c:a libgsm -b:a 13k -f gsm gsm.gsm
  sdp_static "$WORK/gsm.sdp" 3 "a=ptime:20"
  capture gsm 41100 "$WORK/gsm.sdp" python3 "$HERE/send.py" frames gsm gsm.gsm 3 47100
fi
if want g723; then
  $FF -i "$S8" -t 2.5 -c:a g723_1 -b:a 6300 -f g723_1 g723.g723
  sdp_static "$WORK/g723.sdp" 4 "a=ptime:30"
  capture g723 41110 "$WORK/g723.sdp" python3 "$HERE/send.py" frames g723 g723.g723 4 47110
fi

# -- G.729 (no FFmpeg encoder: libbcg729, G.729 Annex A) ------------------------------------------
if want g729; then
  $FF -i "$S8" -t 2.5 -c:a pcm_s16le "$WORK/g729.wav"
  sdp_static "$WORK/g729.sdp" 18 "a=rtpmap:18 G729/8000" "a=fmtp:18 annexb=no" "a=ptime:20"
  capture g729 41120 "$WORK/g729.sdp" python3 "$HERE/send.py" frames g729 "$WORK/g729.wav" 18 47120
  cp "$WORK/g729.wav.g729" g729.g729
fi

# -- L16, 16 kHz stereo ---------------------------------------------------------------------------
if want l16; then
  $FF -i "$S16" -t 1.5 -af "pan=stereo|c0=c0|c1=0.5*c0" -c:a pcm_s16le l16.wav
  sdp_of "$WORK/l16.sdp" -i l16.wav -af "asetnsamples=n=320:p=0" -c:a pcm_s16be -pkt_size 2000
  capture l16 41200 "$WORK/l16.sdp" \
    $FF -re -i l16.wav -af "asetnsamples=n=320:p=0" -c:a pcm_s16be -pkt_size 2000 -f rtp rtp://127.0.0.1:47200
fi

# -- L16, 44.1 kHz stereo (issue 25: the whole stream decoded, delta and jitter as tshark's) -------
# l16_44k: static payload type 10 (RFC 3551 Table 4), the SDP as FFmpeg writes it (no rtpmap);
# l16_44k_dyn: dynamic type 96 announced "a=rtpmap:96 L16/44100/2" (FFmpeg's -payload_type).
# FFmpeg's default packet size (1472 octets: 365 stereo samples, 8.28 ms a packet).
if want l16s44; then
  $FF -i "$S16" -t 1.5 -ar 44100 -af "pan=stereo|c0=c0|c1=0.5*c0" -c:a pcm_s16le l16_44k.wav
  sdp_of "$WORK/l16_44k.sdp" -i l16_44k.wav -c:a pcm_s16be
  capture l16_44k 41510 "$WORK/l16_44k.sdp" \
    $FF -re -i l16_44k.wav -c:a pcm_s16be -f rtp rtp://127.0.0.1:47510
  sdp_of "$WORK/l16_44k_dyn.sdp" -i l16_44k.wav -c:a pcm_s16be -payload_type 96
  capture l16_44k_dyn 41520 "$WORK/l16_44k_dyn.sdp" \
    $FF -re -i l16_44k.wav -c:a pcm_s16be -payload_type 96 -f rtp rtp://127.0.0.1:47520
fi

# -- Opus (wide-band and narrow-band input), Speex ------------------------------------------------
if want opus; then
  $FF -i "$S16" -t 2.5 -c:a libopus -b:a 24k -application voip -frame_duration 20 opus_wb.ogg
  $FF -i "$S8" -t 2.5 -c:a libopus -b:a 12k -application voip -frame_duration 20 opus_nb.ogg
fi
if want speex; then
  $FF -i "$S8" -t 2.5 -c:a libspeex -f ogg speex.ogg
  $FF -i "$S16" -t 2.5 -c:a libspeex -f ogg speex_wb.ogg
fi
port=41300
for name in opus_wb opus_nb speex speex_wb; do
  if want "${name%_*}"; then
    sdp_of "$WORK/$name.sdp" -i "$name.ogg" -c:a copy
    capture "$name" "$port" "$WORK/$name.sdp" \
      $FF -re -i "$name.ogg" -c:a copy -f rtp "rtp://127.0.0.1:$((port + 6000))"
  fi
  port=$((port + 10))
done

# -- AMR-NB (encoded by PyAV's libopencore_amrnb; both RTP payload modes) -------------------------
if want amr; then
  "$PY" - "$S8" amr.amr <<'PYEOF'
import sys, av
src, dst = sys.argv[1], sys.argv[2]
with av.open(src) as i, av.open(dst, "w", format="amr") as o:
    s = o.add_stream("libopencore_amrnb", rate=8000, layout="mono")
    s.bit_rate = 12200
    for f in i.decode(audio=0):
        if f.pts is not None and f.pts >= 20000:
            break
        for p in s.encode(f):
            o.mux(p)
    for p in s.encode(None):
        o.mux(p)
PYEOF
  sdp_static "$WORK/amr_oa.sdp" 96 "a=rtpmap:96 AMR/8000" "a=fmtp:96 octet-align=1" "a=ptime:20"
  capture amr_oa 41400 "$WORK/amr_oa.sdp" python3 "$HERE/send.py" frames amr amr.amr 96 47400 oa
  sdp_static "$WORK/amr_be.sdp" 96 "a=rtpmap:96 AMR/8000" "a=ptime:20"
  capture amr_be 41410 "$WORK/amr_be.sdp" python3 "$HERE/send.py" frames amr amr.amr 96 47410 be
fi

# -- AMR-WB (encoded by the VisualOn encoder, libvo-amrwbenc, through send.py; both payload modes) --
if want amrwb; then
  if ! ldconfig -p | grep -q 'libvo-amrwbenc\.so\.0 '; then
    echo "installing libvo-amrwbenc0 (the AMR-WB encoder) with apt-get" >&2
    apt-get install -y libvo-amrwbenc0 >/dev/null
  fi
  $FF -i "$S16" -t 2.5 -c:a pcm_s16le "$WORK/amrwb.wav"
  python3 "$HERE/send.py" amrwb "$WORK/amrwb.wav" amrwb.amr
  sdp_static "$WORK/amrwb_oa.sdp" 97 "a=rtpmap:97 AMR-WB/16000" "a=fmtp:97 octet-align=1" "a=ptime:20"
  capture amrwb_oa 41420 "$WORK/amrwb_oa.sdp" python3 "$HERE/send.py" frames amrwb amrwb.amr 97 47420 oa
  sdp_static "$WORK/amrwb_be.sdp" 97 "a=rtpmap:97 AMR-WB/16000" "a=ptime:20"
  capture amrwb_be 41430 "$WORK/amrwb_be.sdp" python3 "$HERE/send.py" frames amrwb amrwb.amr 97 47430 be
fi

# -- iLBC, 20 and 30 ms modes (encoded by libjitsi's Java iLBC encoder, see IlbcEncode.java) -------
if want ilbc; then
  if ! command -v mvn >/dev/null || ! command -v javac >/dev/null; then
    echo "installing maven and a JDK (for the iLBC encoder) with apt-get" >&2
    apt-get install -y maven default-jdk-headless >/dev/null
  fi
  mvn -q -B dependency:copy -Dartifact=org.jitsi:libjitsi:1.1-50-g6c95bf22 -DoutputDirectory="$WORK"
  JAR="$WORK/libjitsi-1.1-50-g6c95bf22.jar"
  $FF -i "$S8" -t 2.5 -f s16le -c:a pcm_s16le "$WORK/ilbc.pcm"
  port=41440
  for mode in 20 30; do
    java -cp "$JAR" "$HERE/IlbcEncode.java" $mode "$WORK/ilbc.pcm" "ilbc$mode.lbc"
    sdp_static "$WORK/ilbc$mode.sdp" 97 "a=rtpmap:97 iLBC/8000" "a=fmtp:97 mode=$mode" "a=ptime:$mode"
    capture "ilbc$mode" $port "$WORK/ilbc$mode.sdp" python3 "$HERE/send.py" frames ilbc "ilbc$mode.lbc" 97 $((port + 6000))
    port=$((port + 10))
  done
fi

ls -l "$HERE"

# tshark's view of every capture made (its RTP stream table: packets, lost, jitter)
for f in "${MADE[@]}"; do
  cmd="tshark -q -o rtp.heuristic_rtp:TRUE -z rtp,streams -r $f"
  { echo "# command: $cmd"; echo "# $(tshark -v | head -1)"; $cmd; } > "$f.tshark-rtp-streams.txt"
done
