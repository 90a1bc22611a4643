"""``qoe web ...``: web-browsing QoE: page loads from captures or HAR files, HAR export, G.1030."""

from __future__ import annotations

import click

from qoe.report import Report, to_json
from qoe.web import g1030
from qoe_cli._flags import renamed
from qoe_cli._output import emit, format_option, output_option, render
from qoe_cli._stdin import CAPTURE


@click.group("web")
def web() -> None:
    """Web-browsing QoE: page loads (PLT, RTT/loss diagnosis, G.1030) and HAR files."""


@web.command("g1030")
@click.argument("plt_seconds", nargs=-1, required=True, type=float)
@click.option("--preset", type=click.Choice(list(g1030.PRESETS)), default="access", show_default=True,
              help="Bounds of the seed paper §9.1: access (0.56 s → 5) or backbone (0.85 s → 5); 6 s → 1.")
@click.option("--t-min", type=float, default=None, help="Load time scored 5 (s); overrides the preset.")
@click.option("--t-max", type=float, default=None, help="Load time scored 1 (s); overrides the preset.")
@format_option
@output_option
def g1030_cmd(plt_seconds, preset, t_min, t_max, fmt, output):
    """MOS of one or more page load times (seconds), G.1030 one-page model."""
    scores = g1030.mos(list(plt_seconds), preset=preset, t_min=t_min, t_max=t_max)
    rows = [{"plt_s": t, "mos": float(m)} for t, m in zip(plt_seconds, scores)]
    emit(render(rows, fmt, digits=3), output)


_KEYLOG_HELP = ("NSS key log (SSLKEYLOGFILE of the browser, curl...) to decrypt TLS with (WebOptions.keylog); "
                "repeat for several. A pcapng capture's own Decryption Secrets Blocks are used as well.")
READ_AHEAD_HELP = ("Read the capture's segments in a child process (Linux; elsewhere a second thread) while the "
                   "pages are built (WebOptions.read_ahead); with --keylog the child also reassembles and decrypts: "
                   "less wall time with a core to spare, more CPU time, the same pages. Default: on when the process "
                   "may run on two cores or more and the capture holds 8 MiB or more (2 MiB with --keylog).")
read_ahead_option = click.option("--read-ahead/--no-read-ahead", default=None, help=READ_AHEAD_HELP)


def _load_pages(source, idle_gap_s, preset, t_min, t_max, base_rtt_s=None, keylog=(), read_ahead=None):
    from qoe.web.har import read_har
    from qoe.web.pages import WebOptions, page_loads, pages_from_har

    if (t_min is None) != (t_max is None):
        raise click.UsageError("--t-min and --t-max go together")
    options = WebOptions(idle_gap_s=idle_gap_s, preset=preset, t_min=t_min, t_max=t_max, base_rtt_s=base_rtt_s,
                         keylog=tuple(keylog) or None, read_ahead=read_ahead)
    if source.lower().endswith(".har"):
        return pages_from_har(read_har(source), options=options)
    return page_loads(source, options=options)


@web.command("pages")
@click.argument("source", type=CAPTURE)
@click.option("--preset", type=click.Choice(list(g1030.PRESETS)), default="access", show_default=True,
              help="G.1030 bounds of the seed paper §9.1: access (0.56 s → 5) or backbone (0.85 s → 5); 6 s → 1.")
@click.option("--t-min", type=float, default=None, help="Load time scored 5 (s); with --t-max, overrides the preset.")
@click.option("--t-max", type=float, default=None, help="Load time scored 1 (s).")
@click.option("--idle-gap-s", type=click.FloatRange(min=0, min_open=True), default=2.0,
              show_default=True, help="Quiet time (s) that ends a page load (WebOptions.idle_gap_s).")
@click.option("--base-rtt-s", type=click.FloatRange(min=0), default=None,
              help="The path's RTT without queueing (s), the diagnosis' baseline (default: the page's lowest RTT).")
@click.option("--objects", is_flag=True, help="One row per object (transaction) instead of one per page.")
@click.option("--keylog", multiple=True, type=click.Path(exists=True, dir_okay=False), help=_KEYLOG_HELP)
@read_ahead_option
@format_option
@output_option
@renamed("--idle-gap", "--idle-gap-s", type=click.FloatRange(min=0, min_open=True))
def pages_cmd(source, preset, t_min, t_max, idle_gap_s, base_rtt_s, objects, keylog, read_ahead, fmt, output):
    """Page loads in SOURCE (a pcap/pcapng capture, or a .har file): PLT, round trips, RTT,
    retransmissions, the seed paper's diagnosis (RTT- or loss-dominated) and the G.1030 MOS.

    PLT is "fully loaded": the page's first DNS query, SYN or request to the last byte of its
    last object (a capture cannot see the browser's onLoad; a HAR's onLoad is used when it has one)."""
    found = _load_pages(source, idle_gap_s, preset, t_min, t_max, base_rtt_s, keylog, read_ahead)
    if fmt == "json":
        emit(to_json([p.to_dict() for p in found]) + "\n", output, inputs=[source, *keylog])
        return
    if objects:
        rows = [{**p.identity(), **row} for p in found for row in p.tables()["objects"]]
    else:
        rows = [p.to_record(brief=(fmt == "table")) for p in found]
    text = render(rows, fmt, digits=3) if rows else ("no page load found\n" if fmt == "table" else "")
    if fmt == "table":  # what qoe could not see is said (the JSON and CSV records hold the notes)
        report = Report(kind="web", source=str(source), results=tuple(found))
        text += "".join(f"note: {n}\n" for n in report.note_lines())
    emit(text, output, inputs=[source, *keylog])


@web.command("har")
@click.argument("capture", type=CAPTURE)
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False, writable=True), required=True,
              help="The HAR file to write.")
@click.option("--idle-gap-s", type=click.FloatRange(min=0, min_open=True), default=2.0,
              show_default=True, help="Quiet time (s) that ends a page load (WebOptions.idle_gap_s).")
@click.option("--keylog", multiple=True, type=click.Path(exists=True, dir_okay=False), help=_KEYLOG_HELP)
@read_ahead_option
@renamed("--idle-gap", "--idle-gap-s", type=click.FloatRange(min=0, min_open=True))
def har_cmd(capture, out, idle_gap_s, keylog, read_ahead):
    """Write the HTTP transactions of CAPTURE as a HAR 1.2 file, grouped into pages (`_plt` holds
    each page's fully-loaded time; onLoad is -1: a capture cannot see it). HTTPS is encrypted:
    without --keylog its connections are pages without entries."""
    from qoe.web.har import write_har
    from qoe.web.pages import WebOptions, page_loads, to_har_pages

    found = page_loads(capture, options=WebOptions(idle_gap_s=idle_gap_s, keylog=tuple(keylog) or None,
                                                   read_ahead=read_ahead))
    write_har(out, [t for p in found for t in p.transactions], pages=to_har_pages(found),
              comment=f"written by qoe web har from {click.format_filename(capture)}", inputs=[capture, *keylog])
    click.echo(f"{out}: {len(found)} page(s), {sum(len(p.transactions) for p in found)} entries")
