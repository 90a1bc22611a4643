#!/usr/bin/env bash
# A TCP capture of a case seen in the field, cut from a real run of the test suite's testbed.
#
# reorder_retx_same_tsval.pcap: the first 40 frames of the "reorder" scenario of
# tests/tcp_testbed.py (curl fetching 300 kB from Python's http.server through an htb
# qdisc whose slower class takes the segments with bit 10 of the sequence number set,
# captured by tcpdump at the client), as one `make test` run on 2026-11-26 made it. Frame 24
# is a retransmission by the Linux server of the segment of frame 16, 4.5 ms later, with the
# same TCP header and TSval and a new IPv4 Identification (0xd13f, was 0xd135): tshark flags
# it, and qoe took it for one frame captured twice until the Identification was compared.
#
# The testbed's timing is real: a new run gives a capture of the same kind, not necessarily
# this event. So:
#   data/web/field/make_field.sh run     # as root: run the scenario, cut frames 1-40, then stats
#   data/web/field/make_field.sh stats   # tshark's verdicts on the committed capture
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
cap="$here/reorder_retx_same_tsval.pcap"

if [ "${1:-stats}" = run ]; then
    work=$(mktemp -d)
    (cd "$top" && "${PYTHON:-python3}" -c 'import sys; sys.path.insert(0, "tests")
from tcp_testbed import make_tcp_captures
make_tcp_captures(sys.argv[1])' "$work")
    editcap -r "$work/reorder.pcap" "$cap" 1-40
    rm -rf "$work"
fi

# tshark 4.0.17: every frame its TCP analysis flags as late (retransmission, fast
# retransmission, out-of-order, spurious retransmission), and the IP Identification
tshark -r "$cap" -T fields -E header=y -E separator=/t \
    -e frame.number -e ip.id -e tcp.seq -e tcp.len -e tcp.options.timestamp.tsval \
    -e tcp.analysis.retransmission -e tcp.analysis.fast_retransmission \
    -e tcp.analysis.out_of_order -e tcp.analysis.spurious_retransmission \
    > "$cap.tshark-tcp-analysis.tsv"
