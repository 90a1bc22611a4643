"""``qoe streams``: every RTP stream and SIP call in a capture, with its statistics."""

from __future__ import annotations

import click

from qoe.report import to_csv, to_json
from qoe.rtp import parse_sdp, scan_capture
from qoe_cli._output import emit, format_option, output_option, table
from qoe_cli._stdin import CAPTURE


@click.command("streams")
@click.argument("capture", type=CAPTURE)
@click.option("--heuristic/--sdp-only", default=True, show_default=True,
              help="Also find RTP that no SIP/SDP announced (version 2, one SSRC, progressing sequence numbers).")
@click.option("--min-packets", type=click.IntRange(min=2), default=4, show_default=True,
              help="Fewest packets for an unannounced flow to count as RTP.")
@click.option("--sdp", type=click.Path(exists=True, dir_okay=False), default=None,
              help="An SDP (a browser's offer or answer) naming the streams' codecs, matched under BUNDLE by a=ssrc "
                   "or a payload type only one section maps.")
@click.option("--stream-timeout-s", type=click.FloatRange(min=0, min_open=True), default=25.0, show_default=True,
              help="A stream silent this long has ended (2 s after an RTCP or SIP BYE); a later packet of its flow "
                   "is a second stream (RFC 3550 §6.3.5: 5 RTCP intervals of at least 5 s).")
@click.option("--read-ahead/--no-read-ahead", default=None,
              help="Read the capture in a child process (Linux; elsewhere a second thread) while it is scanned: "
                   "less wall time with a core to spare, more CPU time (the streams are the same). Default: on "
                   "when the process may run on two cores or more and the capture holds 8 MiB or more.")
@click.option("--all-columns", is_flag=True, help="Print every field in the table (JSON and CSV always have them all).")
@format_option
@output_option
def streams(capture, heuristic, min_packets, sdp, stream_timeout_s, read_ahead, all_columns, fmt, output):
    """List the RTP streams and SIP calls in CAPTURE (pcap or pcapng) with RFC 3550
    statistics: packets, lost, sequence errors, arrival delta and interarrival jitter
    (equal to what `tshark -q -z rtp,streams` prints), loss bursts and RTCP round-trip
    times. Streams are found from SIP/SDP and, without signalling, by their RTP headers."""
    media = ()
    if sdp is not None:
        with open(sdp, encoding="utf-8", errors="replace") as fh:
            media = parse_sdp(fh.read()).media
    scan = scan_capture(capture, keep_packets=False, heuristic=heuristic, min_packets=min_packets, sdp=media,
                        stream_timeout_s=stream_timeout_s, read_ahead=read_ahead)
    if fmt == "json":
        text = to_json(scan.to_dict()) + "\n"
    elif fmt == "csv":
        text = to_csv(scan.stream_records())
    else:
        text = f"RTP streams in {capture}: {len(scan.streams)}\n"
        if scan.streams:
            text += table(scan.stream_records(brief=not all_columns), digits=3)
        if scan.calls:
            text += f"\nSIP calls: {len(scan.calls)}\n" + table(scan.call_records(brief=not all_columns), digits=3)
    emit(text, output, inputs=[capture, sdp] if sdp else [capture])
