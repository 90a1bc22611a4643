"""``qoe score``: the QoE of everything scorable in a capture (voice calls, per direction)."""

from __future__ import annotations

import click

import qoe
from qoe_cli._output import emit, format_option, output_option, render


def _notes(report) -> str:  # noqa: ANN001 - a qoe.Report
    """Report notes, then each distinct result note once with the results it applies to."""
    lines = list(report.notes)
    seen: dict[str, list[str]] = {}
    for r in report.results:
        who = r.direction or r.stream
        for n in r.notes:
            seen.setdefault(n, []).append(who)
    lines += [f"[{', '.join(dict.fromkeys(who))}] {n}" for n, who in seen.items()]
    return "".join(f"note: {n}\n" for n in lines)


@click.command("score")
@click.argument("capture", type=click.Path(exists=True, dir_okay=False))
@click.option("--ref", "refs", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Reference speech (WAV); repeat for several. Each is looked for in every stream; "
                   "without one, only the network-side scores.")
@click.option("--sender-capture", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A capture taken at the far end: measures one-way delays and scores each stream at its "
                   "receiving end (CAPTURE is then the user's end).")
@click.option("--delay-ms", type=click.FloatRange(min=0), default=None,
              help="Network one-way delay (ms) of the least-delayed packet, when not measured "
                   "(default: RTCP RTT/2, else assumed 0).")
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
@click.option("--ssrc", default=None, help="Only the call holding this stream (0x7a1c0003 or decimal).")
@click.option("--kind", type=click.Choice(["auto", "voice", "video", "web"]), default="auto", show_default=True,
              help="What to score (video and web are not implemented yet).")
@click.option("--details", type=click.Choice(["results", "windows", "plays"]), default="results",
              show_default=True, help="Table to print: one row per stream, per time window, or per reference play.")
@format_option
@output_option
def score(capture, refs, sender_capture, delay_ms, user, jitter_buffer, conceal, delay_basis, window_s, codec,
          ssrc, kind, details, fmt, output):
    """Score the voice calls in CAPTURE, per direction (user talks / user listens).

    Network-side: G.107 R and MOS from effective loss (after the jitter buffer), burst
    ratio, codec and mouth-to-ear delay, per stream and per window, plus Cole &
    Rosenbluth. With --ref: the seed paper's full-reference score (PESQ → z1, delay
    impairment z2, z = max(0, z1 − z2) → MOS). JSON output holds the whole report."""
    report = qoe.score(
        capture,
        reference=list(refs) or None,
        kind=kind,
        sender_capture=sender_capture,
        one_way_ms=delay_ms,
        user=user,
        jitter_buffer=jitter_buffer,
        conceal=conceal,
        delay_basis=delay_basis,
        window_s=window_s,
        codec=codec,
        ssrc=ssrc,
    )
    if fmt == "json":
        emit(report.to_json() + "\n", output)
        return
    rows = report.to_records(details, brief=(fmt == "table"))
    text = render(rows, fmt, digits=2) if rows else ""
    if fmt == "table":
        text = (text or "no stream scored\n") + _notes(report)
    emit(text, output)
