"""Figures: the seed paper's heatmaps, per-call time series and per-stream video plots.

Needs matplotlib (the ``plot`` extra: ``pip install 'qoe[plot]'``). Every function returns
a :class:`matplotlib.figure.Figure` made without ``pyplot`` (no global state; it shows
itself in a notebook and is saved with :func:`save`).

* :func:`heatmap`, :func:`cell_table` — median per (x, y) setting, coloured by MOS
  category, as the paper's Figures 7–11.
* :func:`call_series` — delay, loss and MOS per window of a call direction.
* :func:`video_frames` — PSNR and SSIM per frame of a video stream, freezes shaded.
* :func:`video_rtp` — frames and kbit/s per second of an RTP video stream from its headers.
* :func:`streaming_series` — bitrate, buffer and stalls of a streaming session.
* :func:`page_waterfall` — a page load's objects: connect, wait and transfer of each, by
  connection, with the page's two load times.
* :func:`figures` — every figure a :class:`qoe.Report` has: one per call direction,
  per scored video stream, per streaming session and per page load;
  :func:`figure_makers` the same, drawn only when asked (one at a time).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from qoe.errors import InputError
from qoe.outputs import atomic_output
from qoe.plot.heatmap import CATEGORY_COLOURS, Cells, cell_table, heatmap, read_results
from qoe.plot.series import call_series, frozen_mask, streaming_series, video_frames, video_rtp
from qoe.plot.waterfall import WATERFALL_PHASES, _drawable, page_waterfall

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "heatmap",
    "read_results",
    "cell_table",
    "Cells",
    "CATEGORY_COLOURS",
    "call_series",
    "video_frames",
    "video_rtp",
    "frozen_mask",
    "streaming_series",
    "page_waterfall",
    "WATERFALL_PHASES",
    "figures",
    "figure_makers",
    "save",
]


def figures(report: Any) -> list[tuple[str, Figure]]:
    """Every per-item figure of a report, with a short name for each.

    Parameters
    ----------
    report : qoe.Report
        From :func:`qoe.score`.

    Returns
    -------
    list of (str, Figure)
        One :func:`call_series` per voice direction with network-side scores, one
        :func:`video_frames` per video stream scored against a reference, one
        :func:`video_rtp` per RTP video stream, one :func:`streaming_series` per
        streaming session and one :func:`page_waterfall` per page load with its objects
        visible, in report order. Items with nothing over time to draw (MPEG-TS in UDP
        without a reference; an HTTPS page without its key log) have none. Every figure is
        held at once: for a report of many items (a trunk's calls, a day of page loads),
        :func:`figure_makers` draws them one at a time.
    """
    return [(name, make()) for name, make in figure_makers(report)]


def figure_makers(report: Any) -> list[tuple[str, Callable[[], Figure]]]:
    """The figures :func:`figures` draws, each as a name and a function that draws it.

    Nothing is drawn here: a caller can count the figures, draw the first few, or draw,
    save and drop each in turn (``qoe plot``), so that memory holds one figure at a time
    (measured, before drawing to a file: a call direction's figure 0.8 MiB, a page's of
    four objects 0.6 MiB; a trunk's thousands of call directions drawn at once would hold
    gigabytes).

    Parameters
    ----------
    report : qoe.Report or iterable
        From :func:`qoe.score`, or scored items themselves (the pages of
        :func:`qoe.web.pages_from_har`, say).

    Returns
    -------
    list of (str, callable)
        In the order of :func:`figures`; ``make()`` returns the Figure.
    """
    out: list[tuple[str, Callable[[], Figure]]] = []
    for item in getattr(report, "results", report):
        kind = getattr(item, "kind", None)
        if kind == "voice" and getattr(getattr(item, "network", None), "windows", None) is not None:
            out.append((f"voice-{item.stream}", partial(call_series, item)))
        elif kind == "video":
            if getattr(item, "comparison", None) is not None:
                out.append((f"video-{item.label}", partial(video_frames, item)))
            if getattr(getattr(item, "facts", item), "headers", None) is not None:
                out.append((f"video-rtp-{item.label}", partial(video_rtp, item)))
        elif kind == "streaming" and item.tables()["seconds"]:
            out.append((f"streaming-{item.index}", partial(streaming_series, item)))
        elif kind == "web" and _drawable(item):
            out.append((f"web-page-{item.index}", partial(page_waterfall, item)))
    return out


def save(fig: Figure, path: str | os.PathLike[str], *, inputs: Any = (), dpi: int = 150) -> None:
    """Write a figure atomically; the format follows the suffix (png, svg, pdf, ...).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    path : str or path-like
    inputs : iterable of paths, optional
        Files the figure was made from: writing over one of them is refused.
    dpi : int, default 150
        Resolution of raster formats.

    Raises
    ------
    InputError
        The path is an input, its folder is missing, or matplotlib cannot write the suffix.
    """

    suffix = os.path.splitext(os.fspath(path))[1].lstrip(".").lower()
    supported = fig.canvas.get_supported_filetypes()
    with atomic_output(path, inputs=inputs) as tmp:  # refuses an input path first
        if suffix not in supported:
            raise InputError(f"{path}: cannot write a figure as {suffix or 'a file without suffix'!r}; "
                             f"use one of {', '.join(sorted(supported))}")
        fig.savefig(tmp, dpi=dpi, format=suffix)
