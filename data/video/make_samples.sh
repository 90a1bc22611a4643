#!/usr/bin/env bash
# Make the real video samples in data/video/: an 8 s H.264 reference clip (ffmpeg lavfi sources,
# x264 with 8 slices per picture, CBR, GOP 25) in MPEG-TS, streamed by ffmpeg as RTP/MPEG-TS,
# plain UDP MPEG-TS and RTP/H.264 (RFC 6184) through a tbf bottleneck between three network
# namespaces, idle and with downlink bulk TCP load (iperf3 -C cubic), captured by tcpdump at the
# receiver (full packets) and the sender (headers only); then what independent tools say about
# each capture (tshark's RTP streams and MPEG-TS continuity, ffprobe/ffmpeg's decoded frames).
#
# Usage (as root, from anywhere):   data/video/make_samples.sh [reference|streams|stats|all] [SCENARIO...]
#   reference  write reference/clip.ts and what ffprobe/ffmpeg say about it
#   streams    run the scenarios, write captures/*.pcap (+ the SDP of the RTP/H.264 streams)
#   stats      tool outputs per capture + captures/manifest.json + measured.md
#   all        (default) the three in order. SCENARIO names restrict "streams" to those scenarios.
# Needs: ffmpeg/ffprobe tcpdump tshark iperf3 iproute2 python3 (Debian 12 packages).
# Whole run: about 3 minutes. Network traffic stays inside the namespaces made here (deleted on
# exit, also on failure). The reference is bit-exact reproducible; captures are not (real timing).
set -euo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
REF=$HERE/reference
CAPS=$HERE/captures
TOOLS=$HERE/tools
WORK=$(mktemp -d /tmp/qoe-video.XXXXXX)
CLIP=$REF/clip.ts

# ---------------------------------------------------------------------------------------------
# Reference clip
# ---------------------------------------------------------------------------------------------
W=352 H=288 FPS=25 CLIP_SECONDS=8          # CIF, 200 pictures
VIDEO_RATE=600k                        # CBR; 0.24 bit/pixel (seed paper §8.1 SD: 4 Mbit/s, 0.39)
FONT=/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf
# A slow zoom into the Mandelbrot set (rendered at 320x240, upscaled) panned along a Lissajous
# path, blended with Conway's life (quarter resolution), a moving picture-in-picture (testsrc2:
# running clock and frame counter), a scrolling caption with the frame number, light temporal
# noise: real motion and texture everywhere, deterministic (fixed seeds).
SOURCE_GRAPH="mandelbrot=s=320x240:r=$FPS:start_scale=2.5:end_scale=0.3:end_pts=200:maxiter=128,\
scale=640:480:flags=bicubic,crop=$W:$H:x='144+120*sin(2*PI*t/8)':y='96+80*sin(2*PI*t/5)',format=yuv420p[m];\
life=s=88x72:r=$FPS:mold=20:ratio=0.12:seed=7:life_color=#ffe060:death_color=#802020:mold_color=#103050,\
scale=$W:$H:flags=neighbor,format=yuv420p[l];\
[m][l]blend=all_mode=overlay:all_opacity=0.4[b];\
testsrc2=s=128x96:r=$FPS,format=yuv420p[t];\
[b][t]overlay=x='mod(40*t,$W+128)-128':y='150+60*sin(2*PI*t/3)':shortest=1,\
drawtext=fontfile=$FONT:text='qoe video %{n}':fontsize=22:fontcolor=white:borderw=2:x='$W-mod(70*t,$W+260)':y=20,\
noise=alls=2:allf=t:all_seed=42,trim=duration=$CLIP_SECONDS"
# x264: 8 slices per picture (seed paper §8.1: 32 slices "to keep errors localized"; 8 at CIF),
# an IDR every 25 pictures (1 s) and never elsewhere (no scene-cut I frames), 2 B frames (IPTV
# style: decode order != display order), HRD CBR with filler data, VBV buffer = 1 s (the seed
# paper's smoothing window). One thread: bit-exact reproducible.
ENCODE_ARGS=(-c:v libx264 -threads 1 -preset medium -profile:v main -bf 2 -g 25 -keyint_min 25
  -sc_threshold 0 -slices 8 -b:v $VIDEO_RATE -minrate $VIDEO_RATE -maxrate $VIDEO_RATE
  -bufsize $VIDEO_RATE -x264-params nal-hrd=cbr -f mpegts)

# ffprobe's frame list (display order, true PTS) and ffmpeg's per-frame MD5 of the decoded
# pictures; $1 = input (file or SDP), $2 = output prefix, further args = input options
FRAME_ENTRIES=frame=key_frame,pts,pkt_dts,pkt_pos,pkt_size,pict_type,coded_picture_number
probe_frames() {
  local in=$1 out=$2
  shift 2
  local cmd="ffprobe -v error $* -threads 1 -select_streams v:0 -show_entries $FRAME_ENTRIES -of csv=p=0:nk=0 $in"
  # (ffprobe prints an empty line per frame for its side-data list: dropped)
  { echo "# command: $cmd"; echo "# $(ffprobe -version | head -n 1)"; $cmd | grep -v '^$'; } >"$out.ffprobe-frames.csv" 2>"$out.ffprobe-frames.log"
  # -fps_mode passthrough: every decoded picture once, no duplicates/drops; -copyts: true PTS
  # -enc_time_base -1: time stamps in the input's 1/90000 (else 1/25)
  cmd="ffmpeg -nostdin -hide_banner -loglevel error $* -threads 1 -copyts -i $in -map 0:v:0 -fps_mode passthrough -enc_time_base -1 -f framemd5 -"
  { echo "# command: $cmd"; $cmd; } >"$out.framemd5" 2>"$out.framemd5.log"
}

make_reference() {
  mkdir -p "$REF"
  ffmpeg -nostdin -hide_banner -loglevel error -y -filter_complex "$SOURCE_GRAPH" \
    -frames:v $((FPS * CLIP_SECONDS)) "${ENCODE_ARGS[@]}" "$CLIP"
  cd "$REF"
  local cmd
  cmd="ffprobe -v error -show_entries stream=codec_name,profile,width,height,pix_fmt,r_frame_rate,start_pts,start_time,duration_ts,nb_frames,bit_rate:format=duration,size,bit_rate -of json clip.ts"
  { echo "// command: $cmd"; $cmd; } >clip.ts.ffprobe-streams.json
  cmd="ffprobe -v error -select_streams v:0 -show_entries packet=pts,dts,size,pos,flags -of csv=p=0:nk=0 clip.ts"
  { echo "# command: $cmd"; $cmd | grep -v '^$'; } >clip.ts.ffprobe-packets.csv
  probe_frames clip.ts clip.ts
  rm -f clip.ts.ffprobe-frames.log clip.ts.framemd5.log   # empty for the reference
  cd "$HERE"
  echo "reference/clip.ts: $(stat -c %s "$CLIP") bytes, $(grep -vc '^#' "$REF/clip.ts.ffprobe-frames.csv") frames"
}

# ---------------------------------------------------------------------------------------------
# Testbed: client <-> router <-> server (TESTBED.md); tbf on the router's two egress interfaces
# ---------------------------------------------------------------------------------------------
NSC=qoevid$$c NSR=qoevid$$r NSS=qoevid$$s
# addresses, rates, in_c/in_r/in_s, testbed_up N (tbf limit N x 1514 bytes), testbed_down, wait_for
. "$HERE/../_testbed/testbed.sh"

cleanup() {
  local ns pids
  # stop what this script started in the background (captures, load, senders), by pid
  pids=$(jobs -p)
  if [ -n "$pids" ]; then kill $pids 2>/dev/null || true; wait 2>/dev/null || true; fi
  for ns in "$NSC" "$NSR" "$NSS" "$NSL"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$WORK"
}
NSL=qoevid$$l      # loopback-only namespace for replaying captures to ffprobe (stats)
trap cleanup EXIT

# ---------------------------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------------------------
# The server streams the clip once to the client (downlink, IPTV-like; seed paper §8.1: "no video
# traffic is present in the upstream").
# columns: name transport buffer load flows ssrc seq0
#   transport: rtp-mpegts (RFC 2250 PT 33, ffmpeg -f rtp_mpegts) | udp-mpegts (7 TS packets per
#              datagram, ffmpeg -f mpegts udp://...?pkt_size=1316) | rtp-h264 (RFC 6184, ffmpeg
#              -f rtp, PT 96, the SDP ffmpeg writes is kept next to the capture)
#   buffer:    N packets at each bottleneck (tbf limit N x 1514 bytes)
#   load:      none | down (iperf3 -C cubic, server -> client, FLOWS parallel flows)
SCENARIOS=(
  "rtpts-idle-b64   rtp-mpegts 64 none 0 0x0a1d0001 1000"
  "rtpts-down-b64   rtp-mpegts 64 down 4 0x0a1d0002 2000"
  "rtpts-down-b8    rtp-mpegts 8  down 4 0x0a1d0003 3000"
  "udpts-idle-b64   udp-mpegts 64 none 0 -          -"
  "udpts-down-b64   udp-mpegts 64 down 4 -          -"
  "h264-idle-b64    rtp-h264   64 none 0 0x0a1d0006 4000"
  "h264-down-b64    rtp-h264   64 down 4 0x0a1d0007 5000"
  "h264-down-b8     rtp-h264   8  down 4 0x0a1d0008 65200"
)
CLIENT_PORT=5004 SERVER_PORT=6004  # RTP (RTCP on port + 1); plain UDP uses the same ports
WARMUP_S=5      # bulk TCP runs this long before the video starts (fills the bottleneck queue)
DRAIN_S=2       # keep capturing after ffmpeg ends (a 64-packet downlink queue drains in 48 ms)
SENDER_SNAPLEN=96   # sender capture: headers only (Ethernet+IP+UDP+RTP+first TS/NAL header)

sender_command() {  # $1 transport $2 ssrc $3 seq0 $4 sdp path: the ffmpeg command line
  local common="ffmpeg -nostdin -hide_banner -loglevel error -re -copyts -i $CLIP -map 0:v -c copy"
  local rtp_url="'rtp://$CLIENT_IP:$CLIENT_PORT?localrtpport=$SERVER_PORT&localrtcpport=$((SERVER_PORT + 1))'"
  case $1 in
    rtp-mpegts)
      # the inner muxers' options: keep the reference's PTS (mpegts_copyts) and fix SSRC/seq
      echo "$common -f rtp_mpegts -mpegts_muxer_options mpegts_copyts=1 -rtp_muxer_options ssrc=$(($2)):seq=$3 $rtp_url" ;;
    udp-mpegts)
      echo "$common -f mpegts -mpegts_copyts 1 'udp://$CLIENT_IP:$CLIENT_PORT?localport=$SERVER_PORT&pkt_size=1316'" ;;
    rtp-h264)
      echo "$common -f rtp -ssrc $(($2)) -seq $3 -sdp_file $4 $rtp_url" ;;
    *) echo "unknown transport $1" >&2; return 1 ;;
  esac
}

run_scenario() {
  local name=$1 transport=$2 buf=$3 load=$4 flows=$5 ssrc=$6 seq0=$7
  local rfile=${name}_client.pcap sfile=${name}_server.pcap sdp=
  [ "$transport" = rtp-h264 ] && sdp=$name.sdp
  echo "== $name: $transport, buffer $buf packets, load $load ($flows flows)"
  testbed_up "$buf"
  in_r tc qdisc show >"$WORK/qdisc.txt"
  rm -f "$CAPS/$name"_*

  # receiver: a socket that takes the stream (no ICMP port unreachable), bounded in time
  # (background processes are started with "ip netns exec" itself, not through in_c: $! is then
  # the process to signal, not a subshell that waits for it)
  ip netns exec "$NSC" timeout 60 python3 -c "
import socket, select
socks = []
for port in ($CLIENT_PORT, $CLIENT_PORT + 1):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('$CLIENT_IP', port)); socks.append(s)
while True:
    for s in select.select(socks, [], [], 60)[0]:
        s.recv(65536)
" &
  local sinkpid=$!

  local rcmd="tcpdump -i c0 --immediate-mode -s 0 -w $rfile udp"
  local scmd="tcpdump -i s0 --immediate-mode -s $SENDER_SNAPLEN -w $sfile udp"
  ip netns exec "$NSC" sh -c "cd '$WORK' && exec $rcmd" 2>"$WORK/rcap.log" &
  local rpid=$!
  ip netns exec "$NSS" sh -c "cd '$WORK' && exec $scmd" 2>"$WORK/scap.log" &
  local spid=$!
  wait_for "$WORK/rcap.log" "listening on"
  wait_for "$WORK/scap.log" "listening on"

  local -a loadpids=()
  rm -f "$WORK"/iperf-*
  if [ "$load" = down ]; then
    ip netns exec "$NSC" timeout -s INT 60 iperf3 -s -1 -B $CLIENT_IP -p 5202 >"$WORK/iperf-server.txt" 2>&1 &
    loadpids+=($!)
    sleep 0.5
    # bounded: should the end-of-test exchange stall, the client gets SIGINT 5 s after its test
    # time (it still writes its JSON); the load figures come from its per-second intervals
    # (sender side) while the video was sent
    ip netns exec "$NSS" timeout -s INT $((WARMUP_S + CLIP_SECONDS + DRAIN_S + 6)) iperf3 -c $CLIENT_IP -p 5202 \
      -C cubic -P "$flows" -t $((WARMUP_S + CLIP_SECONDS + DRAIN_S + 1)) \
      -J >"$WORK/iperf-down.json" 2>"$WORK/iperf-down.err" &
    loadpids+=($!)
    sleep "$WARMUP_S"
  fi

  local cmd
  cmd=$(sender_command "$transport" "$ssrc" "$seq0" "$sdp")
  local t0 t1
  t0=$(date +%s.%N)
  ip netns exec "$NSS" sh -c "cd '$WORK' && exec timeout 60 $cmd"
  t1=$(date +%s.%N)
  sleep "$DRAIN_S"
  kill -INT "$rpid" "$spid"
  wait "$rpid" "$spid" || true
  local p
  if [ ${#loadpids[@]} -gt 0 ]; then
    wait "${loadpids[1]}" || true                       # the iperf3 client (bounded above)
    sleep 1
    kill -INT "${loadpids[0]}" 2>/dev/null || true    # the one-off server, if still there
    wait "${loadpids[0]}" || true
  fi
  kill "$sinkpid" 2>/dev/null || true
  wait "$sinkpid" 2>/dev/null || true
  in_r tc -s qdisc show >"$WORK/qdisc-stats.txt"
  testbed_down
  mv "$WORK/$rfile" "$WORK/$sfile" "$CAPS/"
  [ -z "$sdp" ] || mv "$WORK/$sdp" "$CAPS/"
  chmod 644 "$CAPS/$name"_* ${sdp:+"$CAPS/$sdp"}

  # scenario facts for tools/summarize.py (one JSON object per line)
  python3 - "$CAPS/scenarios.jsonl" "$WORK" <<EOF
import json, os, sys
work = sys.argv[2]
def bulk():
    # iperf3 -J (client = sender side): per-second intervals while the video was sent
    # (WARMUP_S .. WARMUP_S + CLIP_SECONDS after the load started), the retransmissions, any error
    path = os.path.join(work, "iperf-down.json")
    if not os.path.exists(path):
        return None
    try:
        run = json.load(open(path))
    except ValueError:
        return {"error": "iperf3 wrote no JSON"}
    during = [i["sum"]["bits_per_second"] for i in run.get("intervals", [])
              if i["sum"]["start"] >= $WARMUP_S - 0.01 and i["sum"]["end"] <= $WARMUP_S + $CLIP_SECONDS + 0.01]
    end = run.get("end", {})
    snt = end.get("sum_sent", {})
    return {"flows": $flows, "congestion_control": "cubic", "error": run.get("error"),
            "sent_bps_during_video": round(sum(during) / len(during)) if during else None,
            "intervals_during_video": len(during),
            "sent_bps_whole_run": round(snt["bits_per_second"]) if "bits_per_second" in snt else None,
            "retransmits_whole_run": snt.get("retransmits")}
d = {
  "scenario": "$name", "transport": "$transport", "buffer_packets": $buf,
  "qdisc": open(os.path.join(work, "qdisc.txt")).read().splitlines(),
  "qdisc_stats_at_end": open(os.path.join(work, "qdisc-stats.txt")).read().splitlines(),
  "uplink_rate": "$UP_RATE", "downlink_rate": "$DOWN_RATE", "load": "$load", "bulk_tcp_down": bulk(),
  "sender_command": "$cmd".replace("$HERE/", ""), "sender_seconds": round($t1 - $t0, 3),
  "receiver_capture": "$rfile", "receiver_capture_command": "$rcmd",
  "sender_capture": "$sfile", "sender_capture_command": "$scmd",
  "sdp": "$sdp" or None, "src": "$SERVER_IP:$SERVER_PORT", "dst": "$CLIENT_IP:$CLIENT_PORT",
  "ssrc": None if "$ssrc" == "-" else "$ssrc", "seq0": None if "$seq0" == "-" else int("$seq0"),
  "reference": "reference/clip.ts",
}
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(d) + "\n")
EOF
}

make_streams() {
  [ -e "$CLIP" ] || { echo "no $CLIP: run '$0 reference' first" >&2; return 1; }
  mkdir -p "$CAPS"
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
# What independent tools say about each capture
# ---------------------------------------------------------------------------------------------
# Outputs next to <capture> (all in captures/, every file starts with the exact command):
#   <cap>.tshark-rtp-streams.txt  tshark's RTP stream statistics (RTP transports)
#   <cap>.tshark-mp2t-drops.txt   per TS packet with a continuity-counter gap: tshark's count of
#                                 missing TS packets (MPEG-TS transports)
#   <cap>.ts                      (not kept) the received transport stream: the UDP payloads in
#                                 capture order, RTP header (12 bytes) removed for PT 33
#   <cap>.ffprobe-frames.csv      the frames FFmpeg decodes: from the received TS (MPEG-TS
#                                 transports) or from the capture replayed in real time to ffprobe
#                                 over the SDP (rtp-h264, and rtp-mpegts as a second opinion:
#                                 <cap>.sdp-replay.ffprobe-frames.csv); .log = decoder messages
#   <cap>.framemd5                MD5 of each decoded picture with its PTS (same inputs)
make_stats() {
  local f name transport ver
  ver=$(tshark --version 2>/dev/null | head -n 1)
  cd "$CAPS"
  shopt -s nullglob
  for f in *_client.pcap *_server.pcap; do
    name=${f%_*}
    transport=$(python3 -c "
import json, sys
for line in open('scenarios.jsonl'):
    d = json.loads(line)
    if d['scenario'] == '$name': print(d['transport'])")
    [ -n "$transport" ] || { echo "$f: scenario $name not in scenarios.jsonl" >&2; return 1; }
    echo "-- $f ($transport)"
    local cmd
    if [ "$transport" != udp-mpegts ]; then
      # tshark knows no clock rate for a dynamic payload type without SDP: "-d rtp.pt==96,h264"
      # gives it H.264's 90 kHz (else jitter is -1/0)
      cmd="tshark -q -r $f -o rtp.heuristic_rtp:TRUE -z rtp,streams"
      [ "$transport" = rtp-h264 ] && cmd="tshark -q -r $f -o rtp.heuristic_rtp:TRUE -d rtp.pt==96,h264 -z rtp,streams"
      { echo "# command: $cmd"; echo "# tshark: $ver"; $cmd 2>/dev/null; } >"$f.tshark-rtp-streams.txt"
    fi
    case $f in *_server.pcap) continue ;; esac   # sender side: headers only
    if [ "$transport" != rtp-h264 ]; then
      if [ "$transport" = rtp-mpegts ]; then
        cmd="tshark -r $f -o rtp.heuristic_rtp:TRUE -Y mp2t.cc.drop -T fields -e frame.number -e rtp.seq -e mp2t.pid -e mp2t.cc -e mp2t.cc.drop"
      else
        cmd="tshark -r $f -d udp.port==$CLIENT_PORT,mp2t -Y mp2t.cc.drop -T fields -e frame.number -e mp2t.pid -e mp2t.cc -e mp2t.cc.drop"
      fi
      { echo "# command: $cmd"; echo "# tshark: $ver"; $cmd 2>/dev/null; } >"$f.tshark-mp2t-drops.txt"
      # the received transport stream, as a set-top box's demuxer gets it
      local strip=0
      [ "$transport" = rtp-mpegts ] && strip=12
      cmd="tshark -r $f -Y udp.dstport==$CLIENT_PORT -T fields -e udp.payload"
      $cmd | python3 -c "
import sys
out = open('$WORK/$f.ts', 'wb')
for line in sys.stdin:
    data = bytes.fromhex(line.strip())
    if $strip:
        assert data[0] & 0xC0 == 0x80 and data[0] & 0x1F == 0, 'RTP v2 without CSRC/extension'
    out.write(data[$strip:])
"
      ln -sf "$WORK/$f.ts" "$f.ts"
      probe_frames "$f.ts" "$f"
      rm -f "$f.ts"
      sed -i "s|# command: \(.*\) $f.ts|# command: \1 $f.ts  (payloads of: $cmd$( [ $strip = 0 ] || echo ', minus the 12-byte RTP header'))|" \
        "$f.ffprobe-frames.csv" "$f.framemd5"
    fi
    if [ "$transport" != udp-mpegts ]; then
      replay_to_ffprobe "$f" "$transport"
    fi
  done
  cd "$HERE"
  python3 "$TOOLS/summarize.py" "$HERE" >"$HERE/measured.md"
  echo "wrote $HERE/measured.md and $CAPS/manifest.json"
}

# Replay the RTP packets of a receiver capture (original timing, RTCP left out: then ffmpeg's
# PTS = RTP timestamp - first RTP timestamp) to ffprobe and ffmpeg listening on the SDP, in a
# loopback-only namespace: FFmpeg's own RTP depacketiser decides what the frames are. Both
# receivers get the same replay (ports 5004 and 5014); each ends on its own ~20 s after the last
# packet ("Connection timed out").
REPLAY_PORTS=(5004 5014)
replay_to_ffprobe() {
  local f=$1 transport=$2 sdp= out sdpname
  if [ "$transport" = rtp-h264 ]; then
    sdp=${f%_client.pcap}.sdp
    sdpname="the SDP $sdp"
    out=$f
  else
    sdpname="an SDP with m=video <port> RTP/AVP 33"
    out=$f.sdp-replay
  fi
  local i port
  for i in 0 1; do
    port=${REPLAY_PORTS[$i]}
    # the SDP as the receiver uses it: connection address -> loopback, port -> replay port
    if [ -n "$sdp" ]; then
      sed -e "s/^c=IN IP4 .*/c=IN IP4 127.0.0.1/" -e "s/^m=video [0-9]* /m=video $port /" "$sdp" >"$WORK/replay$i.sdp"
    else
      printf 'v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=%s\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=video %s RTP/AVP 33\r\n' \
        "$f" "$port" >"$WORK/replay$i.sdp"
    fi
  done
  ip netns add "$NSL"
  ip -n "$NSL" link set lo up
  local io="-protocol_whitelist file,udp,rtp"
  local pcmd="ffprobe -v error $io -threads 1 -select_streams v:0 -show_entries $FRAME_ENTRIES -of csv=p=0:nk=0 -i"
  local mcmd="ffmpeg -nostdin -hide_banner -loglevel error $io -threads 1 -copyts -i"
  local mtail="-map 0:v:0 -fps_mode passthrough -enc_time_base -1 -f framemd5 -"
  ip netns exec "$NSL" timeout 90 $pcmd "$WORK/replay0.sdp" >"$WORK/replay.csv" 2>"$WORK/replay-ffprobe.log" &
  local p1=$!
  ip netns exec "$NSL" timeout 90 $mcmd "$WORK/replay1.sdp" $mtail >"$WORK/replay.md5" 2>"$WORK/replay-ffmpeg.log" &
  local p2=$!
  sleep 1
  ip netns exec "$NSL" timeout 60 python3 "$TOOLS/replay_rtp.py" "$f" \
    --port $CLIENT_PORT --to 127.0.0.1:${REPLAY_PORTS[0]} --to 127.0.0.1:${REPLAY_PORTS[1]}
  wait "$p1" "$p2" || true
  local note="# input: python3 tools/replay_rtp.py captures/$f --port $CLIENT_PORT --to 127.0.0.1:<port> (real time) to the receiver listening on $sdpname, with c=IN IP4 127.0.0.1"
  { echo "# command: $pcmd <sdp>"; echo "$note"; echo "# $(ffprobe -version | head -n 1)"
    grep -v '^$' "$WORK/replay.csv"; } >"$out.ffprobe-frames.csv"
  sed "s|$WORK/||g" "$WORK/replay-ffprobe.log" >"$out.ffprobe-frames.log"
  { echo "# command: $mcmd <sdp> $mtail"; echo "$note"; cat "$WORK/replay.md5"; } >"$out.framemd5"
  sed "s|$WORK/||g" "$WORK/replay-ffmpeg.log" >"$out.framemd5.log"
  ip netns del "$NSL"
}

stage=${1:-all}
shift || true
case $stage in
  reference) make_reference ;;
  streams) make_streams "$@" ;;
  stats) make_stats ;;
  all) make_reference; make_streams "$@"; make_stats ;;
  *) echo "usage: $0 [reference|streams|stats|all] [SCENARIO...]" >&2; exit 2 ;;
esac
