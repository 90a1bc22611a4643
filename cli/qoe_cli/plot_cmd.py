"""``qoe report`` (the seed paper's heatmap of a results table) and ``qoe plot`` (per-item figures of a capture)."""

from __future__ import annotations

import re
from pathlib import Path

import click

import qoe
from qoe_cli._flags import renamed
from qoe_cli._stdin import CAPTURE


def _labels(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",")] if value else None


def _typed(values: list[str] | None, column) -> list | None:  # noqa: ANN001 - a pandas Series
    """Order labels typed like the column they name (``--x-order 8,64`` on a numeric column)."""
    if values is None:
        return None
    kind = getattr(column, "dtype", None)
    if kind is not None and kind.kind in "iuf":
        return [float(v) if kind.kind == "f" else int(v) for v in values]
    return values


@click.command("report")
@click.argument("results", type=click.Path(exists=True, dir_okay=False))
@click.option("--x", "x", required=True, help="Column along the x axis (the paper: buffer size).")
@click.option("--y", "y", required=True, help="Column along the y axis (the paper: workload).")
@click.option("--metric", default="mos", show_default=True, help="Numeric column summarised in each cell.")
@click.option("--colour-by", default=None, help="MOS column that colours the cells (default: the metric if a MOS, else mos).")
@click.option("--split", default=None, help="Column splitting the heatmap into stacked parts (e.g. direction).")
@click.option("--stat", type=click.Choice(["median", "mean"]), default="median", show_default=True)
@click.option("--x-order", default=None, help="Comma-separated x labels in drawing order.")
@click.option("--y-order", default=None, help="Comma-separated y labels, top first.")
@click.option("--title", default=None)
@click.option("--show-counts/--no-show-counts", default=False, help="Print the number of runs in each cell.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The figure; the suffix gives the format (png, svg, pdf).")
@renamed("--counts/--no-counts", "--show-counts/--no-show-counts", is_flag=True, default=None)
def report(results, x, y, metric, colour_by, split, stat, x_order, y_order, title, show_counts, output):
    """Draw the seed paper's heatmap from a RESULTS table (CSV/Parquet/JSON from `qoe batch`).

    Each cell is the median of METRIC over the runs of one (x, y) setting, coloured by the
    P.800 category of the median MOS (the paper's Figures 6b–11)."""
    from qoe.plot import heatmap, read_results, save

    frame = read_results(results)
    fig = heatmap(frame, x, y, metric=metric, colour_by=colour_by, split=split, stat=stat,
                  x_order=_typed(_labels(x_order), frame.get(x)), y_order=_typed(_labels(y_order), frame.get(y)),
                  title=title, show_counts=show_counts)
    save(fig, output, inputs=[results])
    click.echo(output)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")


@click.command("plot")
@click.argument("capture", type=CAPTURE)
@click.option("--ref", "refs", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Reference speech or video (as for `qoe score`); video needs one to plot frames.")
@click.option("--sdp", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Video: an SDP file for RTP streams the capture does not announce.")
@click.option("--window-s", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default=True,
              help="Voice: window of the per-window scores (s).")
@click.option("--keylog", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Web: NSS key log (SSLKEYLOGFILE) to decrypt HTTPS with, so that its objects can be drawn; "
                   "repeat for several.")
@click.option("--kind", type=click.Choice(["auto", "voice", "video", "web"]), default="auto", show_default=True)
@click.option("--max-figures", type=click.IntRange(min=1), default=100, show_default=True,
              help="Draw at most this many figures (the first items of the report); a note says how many were left.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Figure path; with several items each gets its name before the suffix (out-voice-....png).")
def plot(capture, refs, sdp, window_s, keylog, kind, max_figures, output):
    """Draw per-item figures of CAPTURE: delay, loss and MOS per window of each call
    direction; PSNR and SSIM per frame of each video stream scored against --ref; the
    waterfall of each page load's objects (HTTPS with --keylog; or CAPTURE a browser's
    .har file). Each figure is drawn, written and dropped in turn."""
    from qoe.plot import figure_makers, save
    from qoe.video import VideoOptions
    from qoe.voice.call import CallOptions
    from qoe.web import WebOptions

    options = {"voice": CallOptions(window_s=window_s), "video": VideoOptions(sdp=sdp),
               "web": WebOptions(keylog=tuple(keylog) or None)}
    if capture.lower().endswith(".har"):  # a browser's HAR: its pages' waterfalls
        from qoe.web import pages_from_har
        from qoe.web.har import read_har

        makers = figure_makers(pages_from_har(read_har(capture), options=options["web"]))
    else:
        makers = figure_makers(qoe.score(capture, list(refs) or None, kind=kind, options=options))
    if not makers:
        raise qoe.InputError(f"{capture}: nothing to plot (no call with network scores, no video scored "
                             "against a reference, no page load with its objects visible: HTTPS needs --keylog)")
    out = Path(output)
    inputs = [capture, sdp, *refs, *keylog]
    for name, make in makers[:max_figures]:
        path = out if len(makers) == 1 else out.with_name(f"{out.stem}-{_safe(name)}{out.suffix}")
        save(make(), path, inputs=inputs)
        click.echo(str(path))
    if len(makers) > max_figures:
        click.echo(f"qoe: note: {len(makers)} items have a figure; drew the first {max_figures} (--max-figures)",
                   err=True)
