#!/usr/bin/env bash
# The AMR, AMR-WB and Opus captures of make_codec_captures.sh without their SDP (issue 25: dynamic
# payload types whose payload describes itself): the same real packets (AMR-NB from PyAV's
# libopencore_amrnb, AMR-WB from the VisualOn encoder, both payload modes; Opus from libopus via
# FFmpeg's RTP muxer), with the SIP INVITE that carried the SDP left out, as a tap that never saw
# the signalling would hold them.
#
# Usage:  data/voice/codecs/make_nosdp_captures.sh     (needs tcpdump and tshark; < 1 s)
#   NAME_nosdp.pcap                          NAME.pcap minus every packet to or from port 5060
#   NAME_nosdp.pcap.tshark-rtp-streams.txt   tshark's view of it (packets, lost: as NAME.pcap's)
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"
for name in amr_oa amr_be amrwb_oa amrwb_be opus_wb; do
  tcpdump -r "$name.pcap" -w "${name}_nosdp.pcap" 'not port 5060' 2>/dev/null
  f="${name}_nosdp.pcap"
  cmd="tshark -q -o rtp.heuristic_rtp:TRUE -z rtp,streams -r $f"
  { echo "# command: $cmd"; echo "# $(tshark -v | head -1)"; $cmd; } > "$f.tshark-rtp-streams.txt"
done
