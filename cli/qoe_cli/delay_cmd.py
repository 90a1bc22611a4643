"""``qoe delay``: network one-way delay per RTP stream from a sender- and a receiver-side capture."""

from __future__ import annotations

import click

from qoe.voice.io import capture_delays
from qoe_cli._output import emit, format_option, output_option, render, render_pairs


@click.command("delay")
@click.argument("sender_capture", type=click.Path(exists=True, dir_okay=False))
@click.argument("receiver_capture", type=click.Path(exists=True, dir_okay=False))
@click.option("--ssrc", default=None, help="Only this stream (0x7a1c0003 or decimal).")
@click.option("--clocks", type=click.Choice(["auto", "same", "different"]), default="auto", show_default=True,
              help="Do the two captures share a clock? auto: relative delays (with a warning) when a "
                   "delay is negative or implausibly large.")
@click.option("--jitter-buffer", "jitter_buffer", default=None,
              help="Also count packets late for this receiver buffer: fixed:<ms>, adaptive or none.")
@format_option
@output_option
def delay(sender_capture, receiver_capture, ssrc, clocks, jitter_buffer, fmt, output):
    """One-way network delay statistics of every RTP stream seen in both captures.

    Packets are matched by SSRC and sequence number; prints min/mean/p50/p95/max delay
    (ms), packets matched and lost in the network (and late, with --jitter-buffer). With
    --ssrc, one record (a JSON object); without, a list."""
    results = capture_delays(sender_capture, receiver_capture, clocks=clocks, jitter_buffer=jitter_buffer, ssrc=ssrc)
    records = [r.to_dict() for r in results]
    text = render(records, fmt, digits=3) if ssrc is None else render_pairs(records[0], fmt, digits=3)
    emit(text, output, inputs=[sender_capture, receiver_capture])
