"""``qoe score``: the QoE of everything scorable in a capture (voice calls, per direction)."""

from __future__ import annotations

import click

import qoe
from qoe.api import KINDS
from qoe.voice.call import CallOptions
from qoe_cli._output import emit, format_option, output_option, render


@click.command("score")
@click.argument("capture", type=click.Path(exists=True, dir_okay=False))
@click.option("--ref", "refs", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Reference speech (WAV); repeat for several. Each is looked for in every stream; "
                   "without one, only the network-side scores.")
@click.option("--sender-capture", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A capture taken at the far end: measures one-way delays and scores each stream at its "
                   "receiving end (CAPTURE is then the user's end).")
@click.option("--network-delay-ms", type=click.FloatRange(min=0), default=None,
              help="Network one-way delay (ms) of the least-delayed packet, when not measured "
                   "(default: RTCP RTT/2, else assumed 0). Not the mouth-to-ear delay of `qoe emodel --delay-ms`: "
                   "packetisation, delay variation and the jitter buffer are added to it.")
@click.option("--user", default=None, help="The user's IP address (labels 'user talks' / 'user listens').")
@click.option("--jitter-buffer", default="adaptive", show_default=True,
              help="Receiver buffer to simulate: adaptive, fixed:<ms> or none.")
@click.option("--conceal", type=click.Choice(["repeat", "silence"]), default="repeat", show_default=True,
              help="Loss concealment (repeat: G.711-plc preset for the E-model; silence: G.711).")
@click.option("--delay-basis", type=click.Choice(["conversation", "direction"]), default="conversation",
              show_default=True, help="Delay impairment from the mean of both directions' delays, or each its own.")
@click.option("--window-s", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default=True,
              help="Window of the per-window network-side scores (s).")
@click.option("--codec", default=None, help="G.113 codec preset for Ie/Bpl (default: from the payload type).")
@click.option("--clocks", type=click.Choice(["auto", "same", "different"]), default="auto", show_default=True,
              help="Do CAPTURE and --sender-capture share a clock? auto: relative delays (with a warning) when a "
                   "delay is negative or implausibly large.")
@click.option("--ssrc", default=None, help="Only the call holding this stream (0x7a1c0003 or decimal).")
@click.option("--kind", type=click.Choice(list(KINDS)), default="auto", show_default=True,
              help="What to score (video and web are not implemented yet).")
@click.option("--details", default="results", show_default=True,
              help="Table to print: results (one row per scored item) or a detail table of the report "
                   "(voice: windows, plays).")
@format_option
@output_option
def score(capture, refs, sender_capture, network_delay_ms, user, jitter_buffer, conceal, delay_basis, window_s,
          codec, clocks, ssrc, kind, details, fmt, output):
    """Score the voice calls in CAPTURE, per direction (user talks / user listens).

    Network-side: G.107 R and MOS from effective loss (after the jitter buffer), burst
    ratio, codec and mouth-to-ear delay, per stream and per window, plus Cole &
    Rosenbluth. With --ref: the seed paper's full-reference score (PESQ → z1, delay
    impairment z2, z = max(0, z1 − z2) → MOS). JSON output holds the whole report."""
    options = CallOptions(jitter_buffer=jitter_buffer, conceal=conceal, delay_basis=delay_basis, window_s=window_s,
                          codec=codec, user=user, network_delay_ms=network_delay_ms, clocks=clocks)
    report = qoe.score(capture, reference=list(refs) or None, kind=kind, options=options,
                       sender_capture=sender_capture, ssrc=ssrc)
    if fmt == "json":
        emit(report.to_json() + "\n", output)
        return
    rows = report.to_records(details, brief=(fmt == "table"))
    text = render(rows, fmt, digits=2) if rows else ""
    if fmt == "table":
        text = (text or "nothing scored\n") + "".join(f"note: {n}\n" for n in report.note_lines())
    emit(text, output)
