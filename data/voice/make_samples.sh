#!/usr/bin/env bash
# Make the real voice-call samples in data/voice/: speech WAVs (espeak-ng + sox), then calls
# (RTP G.711 in both directions, sent by ffmpeg) through a tbf bottleneck between three network
# namespaces, with and without bulk TCP load (iperf3 -C cubic), captured by tcpdump/dumpcap at
# both ends, then tshark's RTP stream statistics and a one-way-delay summary per capture.
#
# Usage (as root, from anywhere):   data/voice/make_samples.sh [speech|calls|stats|all] [SCENARIO...]
#   speech  write speech/*.wav                      calls  run the scenarios, write captures/*
#   stats   tshark outputs + manifest.json + measured.md from the captures already there
#   all     (default) the three in order. SCENARIO names restrict "calls" to those scenarios.
# Needs: espeak-ng sox ffmpeg tcpdump tshark (dumpcap, editcap) iperf3 sipp (Debian: sip-tester)
# iproute2 python3. Whole run: about 4 minutes. Network traffic stays inside the namespaces made
# here (deleted on exit). Speech is bit-exact reproducible; captures are not (real timing).
set -euo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
SPEECH=$HERE/speech
CAPS=$HERE/captures
TOOLS=$HERE/tools
WORK=$(mktemp -d /tmp/qoe-voice.XXXXXX)

# ---------------------------------------------------------------------------------------------
# Speech
# ---------------------------------------------------------------------------------------------
# voice id | espeak-ng voice | text (SSML; <break> = pause between sentences)
VOICES=(
  "en_us_male|en-us|The birch canoe slid on the smooth planks.<break time=\"600ms\"/>Glue the sheet to the dark blue background.<break time=\"600ms\"/>It is easy to tell the depth of a well."
  "en_gb_female|en-gb+f3|These days a chicken leg is a rare dish.<break time=\"600ms\"/>Rice is often served in round bowls.<break time=\"600ms\"/>The juice of lemons makes fine punch."
  "de_male|de|Der alte Mann geht jeden Morgen in den Park.<break time=\"600ms\"/>Heute regnet es, aber morgen scheint die Sonne.<break time=\"600ms\"/>Wir treffen uns um acht."
)
SPEECH_SECONDS=8.0   # every file: 0.3 s lead-in silence, speech, digital silence up to 8.0 s
TARGET_DBOV=-26      # active speech level (ITU-T P.56 method B, tools/p56_level.py)

make_speech() {
  mkdir -p "$SPEECH"
  local entry id voice text rate raw gain lev nsamp total
  for entry in "${VOICES[@]}"; do
    IFS='|' read -r id voice text <<<"$entry"
    raw=$WORK/$id.22k.wav
    # -a 50: half amplitude so espeak-ng never clips (its own output is 22050 Hz 16-bit mono)
    espeak-ng -a 50 -m -v "$voice" -w "$raw" "<speak>$text</speak>"
    for rate in 8000 16000; do
      # -D: no dither, so the files are bit-exact reproducible; rate -v: very high quality
      sox -D "$raw" -r "$rate" -b 16 -c 1 "$WORK/$id.$rate.lead.wav" rate -v pad 0.3 0
      nsamp=$(soxi -s "$WORK/$id.$rate.lead.wav")
      total=$(python3 -c "print(round($SPEECH_SECONDS * $rate))")
      [ "$nsamp" -le "$total" ] || { echo "$id: speech longer than $SPEECH_SECONDS s" >&2; exit 1; }
      sox -D "$WORK/$id.$rate.lead.wav" "$WORK/$id.$rate.wav" pad 0 "$((total - nsamp))s"
      gain=$(python3 "$TOOLS/p56_level.py" "$WORK/$id.$rate.wav" --target "$TARGET_DBOV")
      sox -D "$WORK/$id.$rate.wav" "$SPEECH/${id}_$((rate / 1000))k.wav" vol "$gain" dB
      # the speech must end inside the file: the last 0.2 s are digital silence
      python3 - "$SPEECH/${id}_$((rate / 1000))k.wav" <<'EOF'
import sys, wave, array
w = wave.open(sys.argv[1]); n = w.getnframes(); r = w.getframerate()
w.setpos(n - r // 5); tail = array.array("h", w.readframes(r // 5))
assert not any(tail), f"{sys.argv[1]}: speech runs into the last 0.2 s, shorten the text"
EOF
      lev=$(python3 "$TOOLS/p56_level.py" "$SPEECH/${id}_$((rate / 1000))k.wav")
      echo "speech/${id}_$((rate / 1000))k.wav: active level/activity $lev (espeak-ng -v $voice)"
    done
  done
}

# ---------------------------------------------------------------------------------------------
# Testbed: client <-> router <-> server (TESTBED.md); tbf on the router's two egress interfaces
# ---------------------------------------------------------------------------------------------
NSC=qoev$$c NSR=qoev$$r NSS=qoev$$s
# addresses, rates, in_c/in_r/in_s, testbed_up N [bytes|packets], testbed_down, wait_for
. "$HERE/../_testbed/testbed.sh"

cleanup() {
  local ns pids
  # stop what this script started in the background (captures, load, senders), by pid
  pids=$(jobs -p)
  if [ -n "$pids" ]; then kill $pids 2>/dev/null || true; wait 2>/dev/null || true; fi
  for ns in "$NSC" "$NSR" "$NSS"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# ---------------------------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------------------------
# The call: client = the user. "talk" stream client -> server (uplink), "listen" stream
# server -> client (downlink), both at once, 8 s of speech each, G.711 20 ms packets.
# columns: name buffer queue load codec sip client_capture server_capture talk_voice listen_voice
#          talk_seq0 listen_seq0
#   buffer:  N packets at each bottleneck (seed paper §5.3: 8 .. 256)
#   queue:   bytes   = tbf's own fifo, limit N x 1514 bytes (TESTBED.md): a byte limit lets
#                      small voice packets into the gaps a full-size TCP packet cannot use;
#            packets = pfifo of N packets under tbf (the seed paper's router counts packets)
#   load:    none | up (bulk TCP client->server) | down (server->client) | both
#   capture: eth (tcpdump on the veth, pcap us) | eth_nano (pcap ns) | sll (tcpdump -i any,
#            Linux cooked v1) | sll2 (-i any -y LINUX_SLL2) | pcapng (dumpcap on the veth) |
#            pcapng2if (dumpcap on two interfaces: the veth for packets sent, "any" (Linux
#            cooked) for packets received, so each packet is stored once; two IDBs, two link types)
SCENARIOS=(
  "noload-b64-sip    64  bytes   none PCMA sip eth      pcapng en_us_male   en_gb_female 1000  2000"
  "noload-b64-pcmu   64  bytes   none PCMU -   eth_nano sll    en_gb_female de_male      3000  4000"
  "up-b8             8   bytes   up   PCMA -   eth      eth    en_us_male   en_gb_female 5000  6000"
  "up-b8-pfifo       8   packets up   PCMA -   eth      eth    en_us_male   en_gb_female 7000  8000"
  "up-b64            64  bytes   up   PCMA -   eth      sll2   de_male      en_us_male   9000  10000"
  "up-b256           256 bytes   up   PCMA -   eth      eth    en_us_male   en_gb_female 65300 11000"
  "up-b256-sip       256 bytes   up   PCMA sip pcapng   eth    en_gb_female en_us_male   12000 13000"
  "down-b8           8   bytes   down PCMA -   eth      eth    en_us_male   en_gb_female 14000 15000"
  "down-b256         256 bytes   down PCMA -   eth      eth    de_male      en_us_male   16000 65400"
  "both-b64          64  bytes   both PCMA -   pcapng2if eth    en_us_male   en_gb_female 17000 18000"
  "up-b256-pfifo     256 packets up   PCMA -   eth      eth    de_male      en_gb_female 19000 20000"
)
CLIENT_RTP=40000 SERVER_RTP=50000   # symmetric RTP: each sender sends from its receive port
BULK_FLOWS=${BULK_FLOWS:-4}    # parallel TCP flows per loaded direction (iperf3 -P)
WARMUP_S=5      # bulk TCP runs this long before the call (fills the bottleneck queue)
CALL_HOLD_S=9   # SIP: BYE this long after the ACK (8 s of speech + 1 s)
DRAIN_S=4       # keep capturing after the last packet is sent (uplink queue of 256: 3.1 s)

ip_of() { if [ "$1" = c0 ]; then echo $CLIENT_IP; else echo $SERVER_IP; fi; }

capture_command() {  # $1 kind $2 interface $3 file name: the capture command (run and recorded)
  case $1 in
    eth) echo "tcpdump -i $2 --immediate-mode -s 0 -w $3 udp" ;;
    eth_nano) echo "tcpdump -i $2 --immediate-mode --time-stamp-precision=nano -s 0 -w $3 udp" ;;
    sll) echo "tcpdump -i any -y LINUX_SLL --immediate-mode -s 0 -w $3 udp" ;;
    sll2) echo "tcpdump -i any -y LINUX_SLL2 --immediate-mode -s 0 -w $3 udp" ;;
    pcapng) echo "dumpcap -q -i $2 -f udp -s 0 -w $3" ;;
    pcapng2if) echo "dumpcap -q -i $2 -f 'udp and src host $(ip_of "$2")' -s 0 -i any -f 'udp and dst host $(ip_of "$2")' -s 0 -w $3" ;;
    *) echo "unknown capture kind $1" >&2; return 1 ;;
  esac
}

start_capture() {  # $1 namespace $2 interface $3 kind $4 file name (in $WORK); sets CAPTURE_PID
  local cmd
  cmd=$(capture_command "$3" "$2" "$4")
  ip netns exec "$1" sh -c "cd '$WORK' && exec $cmd" 2>"$WORK/$4.log" &
  CAPTURE_PID=$!
  case $3 in
    pcapng*) wait_for "$WORK/$4.log" "Capturing on" ;;
    *) wait_for "$WORK/$4.log" "listening on" ;;
  esac
}

ext_of() { case $1 in pcapng*) echo pcapng ;; *) echo pcap ;; esac; }

ffmpeg_sender() {  # $1 ns $2 wav $3 codec $4 pt $5 local port $6 dst ip $7 dst port $8 ssrc $9 seq0
  local enc=pcm_alaw
  [ "$3" = PCMU ] && enc=pcm_mulaw
  # asetnsamples: 160-sample (20 ms) frames = one RTP packet each; arealtime: paces the frames
  # at real time (clean 20 ms spacing; -re sends back-to-back pairs, see TESTBED.md)
  ip netns exec "$1" ffmpeg -nostdin -hide_banner -loglevel error -i "$2" \
    -af "asetnsamples=n=160:p=0,arealtime" -c:a "$enc" -ar 8000 -ac 1 \
    -f rtp -payload_type "$4" -ssrc "$8" -seq "$9" \
    "rtp://$6:$7?localrtpport=$5&localrtcpport=$(($5 + 1))" >/dev/null
}

run_scenario() {
  local name=$1 buf=$2 queue=$3 load=$4 codec=$5 sip=$6 ccap=$7 scap=$8 tvoice=$9
  local lvoice=${10} tseq=${11} lseq=${12} idx=${13}
  local pt=8
  [ "$codec" = PCMU ] && pt=0
  local tssrc lssrc
  tssrc=$(printf '0x7a1c%04x' "$idx")   # "talk" SSRC, one per scenario
  lssrc=$(printf '0x15e0%04x' "$idx")   # "listen" SSRC
  local cfile=${name}_client.$(ext_of "$ccap") sfile=${name}_server.$(ext_of "$scap")
  echo "== $name: buffer $buf packets ($queue), load $load, $codec, sip=$sip"
  testbed_up "$buf" "$queue"
  in_r tc qdisc show >"$WORK/qdisc.txt"
  rm -f "$CAPS/$cfile" "$CAPS/$sfile"
  local cpid spid
  start_capture "$NSC" c0 "$ccap" "$cfile"
  cpid=$CAPTURE_PID
  start_capture "$NSS" s0 "$scap" "$sfile"
  spid=$CAPTURE_PID

  local -a loadpids=()
  rm -f "$WORK"/iperf-*
  local tload=$((WARMUP_S + 10))
  if [ "$load" = up ] || [ "$load" = both ]; then
    in_s timeout 40 iperf3 -s -1 -B $SERVER_IP -p 5201 >"$WORK/iperf-up-server.txt" 2>&1 &
    loadpids+=($!)
  fi
  if [ "$load" = down ] || [ "$load" = both ]; then
    in_c timeout 40 iperf3 -s -1 -B $CLIENT_IP -p 5202 >"$WORK/iperf-down-server.txt" 2>&1 &
    loadpids+=($!)
  fi
  sleep 0.5
  if [ "$load" = up ] || [ "$load" = both ]; then
    in_c timeout 40 iperf3 -c $SERVER_IP -p 5201 -C cubic -P $BULK_FLOWS -t $tload -J >"$WORK/iperf-up.json" 2>"$WORK/iperf-up.err" &
    loadpids+=($!)
  fi
  if [ "$load" = down ] || [ "$load" = both ]; then
    in_s timeout 40 iperf3 -c $CLIENT_IP -p 5202 -C cubic -P $BULK_FLOWS -t $tload -J >"$WORK/iperf-down.json" 2>"$WORK/iperf-down.err" &
    loadpids+=($!)
  fi
  [ "$load" = none ] || sleep "$WARMUP_S"

  local uaspid= uacpid=
  if [ "$sip" = sip ]; then
    local flag=$WORK/answered
    rm -f "$flag"
    in_s timeout 60 sipp -sf "$HERE/sip/uas.xml" -i $SERVER_IP -p 5060 -m 1 \
      -set pt $pt -set codec "$codec" -set rtp_port $SERVER_RTP -nostdin >"$WORK/sipp-uas.txt" 2>&1 &
    uaspid=$!
    sleep 0.5
    in_c timeout 60 sipp -sf "$HERE/sip/uac.xml" -i $CLIENT_IP -p 5060 -m 1 \
      -set pt $pt -set codec "$codec" -set rtp_port $CLIENT_RTP -set flag "$flag" \
      -set talk_ms $((CALL_HOLD_S * 1000)) -nostdin $SERVER_IP:5060 >"$WORK/sipp-uac.txt" 2>&1 &
    uacpid=$!
    local i
    for i in $(seq 200); do [ -e "$flag" ] && break; sleep 0.05; done
    [ -e "$flag" ] || { echo "SIP call was not answered" >&2; cat "$WORK"/sipp-*.txt >&2; return 1; }
  fi

  ffmpeg_sender "$NSC" "$SPEECH/${tvoice}_8k.wav" "$codec" $pt $CLIENT_RTP $SERVER_IP $SERVER_RTP "$tssrc" "$tseq" &
  local f1=$!
  ffmpeg_sender "$NSS" "$SPEECH/${lvoice}_8k.wav" "$codec" $pt $SERVER_RTP $CLIENT_IP $CLIENT_RTP "$lssrc" "$lseq" &
  local f2=$!
  wait $f1 $f2
  if [ -n "$uacpid" ]; then wait "$uacpid" || { cat "$WORK"/sipp-ua?.txt >&2; return 1; }; fi
  if [ -n "$uaspid" ]; then wait "$uaspid" || { cat "$WORK/sipp-uas.txt" >&2; return 1; }; fi
  sleep "$DRAIN_S"
  kill -INT "$cpid" "$spid"
  wait "$cpid" "$spid" || true
  local p
  for p in "${loadpids[@]}"; do wait "$p" || true; done
  in_r tc -s qdisc show >"$WORK/qdisc-stats.txt"
  testbed_down
  mv "$WORK/$cfile" "$WORK/$sfile" "$CAPS/"
  chmod 644 "$CAPS/$cfile" "$CAPS/$sfile"
  # scenario facts for tools/summarize.py (one JSON object per line)
  python3 - "$CAPS/scenarios.jsonl" "$WORK" <<EOF
import json, os, sys
def bulk(direction):
    # iperf3 -J's own end-of-test summary: what the bulk TCP load actually carried
    path = os.path.join(sys.argv[2], f"iperf-{direction}.json")
    if not os.path.exists(path):
        return None
    end = json.load(open(path))["end"]
    return {"flows": len(end["streams"]), "seconds": round(end["sum_received"]["seconds"], 3),
            "received_bps": round(end["sum_received"]["bits_per_second"]),
            "retransmits": end["sum_sent"].get("retransmits")}
d = {
  "scenario": "$name", "buffer_packets": $buf, "queue_unit": "$queue",
  "qdisc": open(os.path.join(sys.argv[2], "qdisc.txt")).read().splitlines(),
  "qdisc_stats_at_end": open(os.path.join(sys.argv[2], "qdisc-stats.txt")).read().splitlines(),
  "uplink_rate": "$UP_RATE", "downlink_rate": "$DOWN_RATE", "load": "$load",
  "bulk_tcp": {"up": bulk("up"), "down": bulk("down"), "congestion_control": "cubic"},
  "codec": "$codec", "payload_type": $pt, "sip": "$sip" == "sip",
  "client_capture": "$cfile", "client_capture_command": "$(capture_command "$ccap" c0 "$cfile")",
  "server_capture": "$sfile", "server_capture_command": "$(capture_command "$scap" s0 "$sfile")",
  "streams": [
    {"direction": "talk", "ssrc": "$tssrc", "seq0": $tseq, "src": "$CLIENT_IP:$CLIENT_RTP",
     "dst": "$SERVER_IP:$SERVER_RTP", "reference": "speech/${tvoice}_8k.wav",
     "sender_capture": "$cfile", "receiver_capture": "$sfile"},
    {"direction": "listen", "ssrc": "$lssrc", "seq0": $lseq, "src": "$SERVER_IP:$SERVER_RTP",
     "dst": "$CLIENT_IP:$CLIENT_RTP", "reference": "speech/${lvoice}_8k.wav",
     "sender_capture": "$sfile", "receiver_capture": "$cfile"},
  ],
}
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(d) + "\n")
EOF
}

make_calls() {
  mkdir -p "$CAPS"
  local want=("$@") line name idx=0 fields
  if [ ${#want[@]} -eq 0 ]; then rm -f "$CAPS/scenarios.jsonl"; fi
  for line in "${SCENARIOS[@]}"; do
    idx=$((idx + 1))
    read -ra fields <<<"$line"
    name=${fields[0]}
    if [ ${#want[@]} -gt 0 ]; then
      [[ " ${want[*]} " == *" $name "* ]] || continue
      # replace this scenario's line in scenarios.jsonl
      if [ -e "$CAPS/scenarios.jsonl" ]; then
        grep -v "\"scenario\": \"$name\"" "$CAPS/scenarios.jsonl" >"$WORK/s.jsonl" || true
        mv "$WORK/s.jsonl" "$CAPS/scenarios.jsonl"
      fi
    fi
    run_scenario "${fields[@]}" "$idx"
  done
}

# ---------------------------------------------------------------------------------------------
# tshark outputs and summary
# ---------------------------------------------------------------------------------------------
make_stats() {
  local f cmd out ver
  ver=$(tshark --version 2>/dev/null | head -n 1)
  cd "$CAPS"
  shopt -s nullglob
  for f in *.pcap *.pcapng; do
    # SIP captures: streams found from SDP (no heuristic); others need the RTP heuristic
    if tshark -r "$f" -Y sip -T fields -e frame.number 2>/dev/null | grep -q .; then
      cmd="tshark -q -r $f -z rtp,streams"
    else
      cmd="tshark -q -r $f --enable-heuristic rtp_udp -z rtp,streams"
    fi
    out=$f.tshark-rtp-streams.txt
    { echo "# command: $cmd"; echo "# tshark: $ver"; $cmd 2>/dev/null; } >"$out"
  done
  cd "$HERE"
  python3 "$TOOLS/summarize.py" "$CAPS" >"$HERE/measured.md"
  echo "wrote $HERE/measured.md and $CAPS/manifest.json"
}

stage=${1:-all}
shift || true
case $stage in
  speech) make_speech ;;
  calls) make_calls "$@" ;;
  stats) make_stats ;;
  all) make_speech; make_calls "$@"; make_stats ;;
  *) echo "usage: $0 [speech|calls|stats|all] [SCENARIO...]" >&2; exit 2 ;;
esac
