"""The seed paper's heatmaps: one cell per (x, y) setting, its median, coloured by MOS category.

Pujol et al. show every result as a heatmap (their Figures 7–11): buffer size on the x axis,
workload on the y axis, one cell per combination holding the median over the runs, the
cell coloured by the MOS category of that median (their Figure 6b: 5 excellent, 4 good,
3 fair, 2 poor, 1 bad), and the figure split into stacked parts (user talks / user listens,
HD / SD). :func:`cell_table` computes the cells; :func:`heatmap` draws them.

The colour of a cell is the P.800 ACR category (:func:`qoe.mos.acr_label`) of the median
of a MOS column, which need not be the value printed: the paper prints the median SSIM or
PLT and colours by the MOS it maps to. The five colours are ColorBrewer's diverging
``RdYlGn`` scheme (five classes), chosen because it stays readable for the common forms
of colour blindness and in grey scale, as the paper's figures had to.

References
----------
.. [1] C. Pujol et al., "A QoE Perspective on Sizing Network Buffers", ACM IMC 2014,
   §7–§9 and Figure 6.
.. [2] ITU-T P.800 (08/1996), Annex B, Table B.1 (the five-point ACR scale).
.. [3] C. A. Brewer, ColorBrewer 2.0, scheme RdYlGn, 5 data classes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from qoe.errors import InputError
from qoe.mos import ACR_LABELS, acr_label
from qoe.report import read_table

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["CATEGORY_COLOURS", "Cells", "cell_table", "heatmap", "read_results"]

#: Cell colour per ACR category (ColorBrewer RdYlGn, 5 classes: bad → excellent).
CATEGORY_COLOURS: dict[str, str] = dict(zip(ACR_LABELS, ("#d7191c", "#fdae61", "#ffffbf", "#a6d96a", "#1a9641")))
_EMPTY = "#eeeeee"
_STATS = ("median", "mean")


@dataclass(frozen=True)
class Cells:
    """The cells of a heatmap, one grid per part.

    Attributes
    ----------
    x, y : tuple
        The column and row labels, in drawing order (y from the top).
    parts : tuple
        The split values, one grid each (``(None,)`` without a split).
    value : ndarray, shape (parts, len(y), len(x))
        The statistic of the metric in each cell (NaN where no run has a value).
    colour_mos : ndarray, same shape
        The statistic of the colouring MOS column (NaN where none).
    count : ndarray of int, same shape
        Runs with a value in each cell.
    metric, colour_by, stat : str
        What the cells hold.
    """

    x: tuple[Any, ...]
    y: tuple[Any, ...]
    parts: tuple[Any, ...]
    value: np.ndarray
    colour_mos: np.ndarray
    count: np.ndarray
    metric: str
    colour_by: str
    stat: str

    def category(self) -> np.ndarray:
        """The ACR category name of each cell's colouring MOS (``""`` for an empty cell)."""
        out = np.full(self.colour_mos.shape, "", dtype=object)
        ok = ~np.isnan(self.colour_mos)
        out[ok] = acr_label(self.colour_mos[ok])
        return out

    def to_frame(self) -> pd.DataFrame:
        """One tidy row per cell: part, y, x, value, colour MOS, category and count."""
        import pandas as pd  # noqa: PLC0415 - pandas is only needed here

        cat = self.category()
        rows = [
            {"part": p, "y": yv, "x": xv, self.metric: self.value[i, j, k],
             f"{self.colour_by}_colour": self.colour_mos[i, j, k], "category": cat[i, j, k] or None,
             "runs": int(self.count[i, j, k])}
            for i, p in enumerate(self.parts) for j, yv in enumerate(self.y) for k, xv in enumerate(self.x)
        ]
        return pd.DataFrame(rows)


def _frame(data: Any) -> pd.DataFrame:
    import pandas as pd  # noqa: PLC0415 - pandas only when a table is drawn

    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, Mapping) or (isinstance(data, Sequence) and not isinstance(data, (str, bytes))):
        return pd.DataFrame(data)
    raise InputError(f"heatmap data must be a DataFrame or a list of records, not {type(data).__name__}")


def _order(values: Any, given: Sequence[Any] | None, name: str) -> tuple[Any, ...]:
    """The labels of an axis: as given, else sorted when all are numbers, else by first appearance."""
    present = list(dict.fromkeys(v for v in values if not (isinstance(v, float) and math.isnan(v))))
    if given is not None:
        missing = [v for v in given if v not in present]
        if len(missing) == len(list(given)):
            raise InputError(f"none of the {name} values asked for ({list(given)!r}) is in the data")
        return tuple(given)
    if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in present):
        return tuple(sorted(present))
    return tuple(present)


def _default_colour_by(frame: pd.DataFrame, metric: str) -> str:
    if "mos" in metric.lower():
        return metric
    if "mos" in frame.columns:
        return "mos"
    raise InputError(f"cannot colour by MOS: metric {metric!r} is not a MOS and there is no 'mos' column; "
                     "give colour_by=")


def cell_table(
    data: Any,
    x: str,
    y: str,
    *,
    metric: str = "mos",
    colour_by: str | None = None,
    split: str | None = None,
    stat: str = "median",
    x_order: Sequence[Any] | None = None,
    y_order: Sequence[Any] | None = None,
    split_order: Sequence[Any] | None = None,
) -> Cells:
    """The cells of the paper's heatmap: the statistic of ``metric`` per (``y``, ``x``) setting.

    Parameters
    ----------
    data : pandas.DataFrame or list of dict
        One row per scored item (what :func:`qoe.batch.run` returns, or
        :meth:`qoe.Report.to_frame` of several captures concatenated), with the label
        columns ``x``, ``y`` (and ``split``) and the numeric ``metric``.
    x, y : str
        The label columns of the columns and rows (the paper: buffer size, workload).
    metric : str, default "mos"
        The numeric column summarised in each cell. Rows where it is missing (a failed
        run, an ``error``) are left out and not counted.
    colour_by : str, optional
        The MOS column whose statistic colours each cell; default ``metric`` when its
        name holds ``mos``, else the ``mos`` column.
    split : str, optional
        A label column splitting the heatmap into stacked parts (the paper: direction,
        "user talks" above "user listens"; or HD above SD).
    stat : {"median", "mean"}, default "median"
        The statistic per cell; the paper shows medians.
    x_order, y_order, split_order : sequence, optional
        Labels in drawing order (y and parts from the top); default: sorted when all
        numbers, else in order of first appearance. A label asked for and absent gives an
        empty cell.

    Returns
    -------
    Cells

    Raises
    ------
    InputError
        A column is missing, the metric is not numeric, or ``stat`` is unknown.
    """
    import pandas as pd  # noqa: PLC0415 - pandas only when a table is drawn

    frame = _frame(data)
    if stat not in _STATS:
        raise InputError(f"stat must be one of {_STATS}, not {stat!r}")
    colour_by = colour_by or _default_colour_by(frame, metric)
    needed = [c for c in (x, y, metric, colour_by, split) if c is not None]
    missing = [c for c in dict.fromkeys(needed) if c not in frame.columns]
    if missing:
        raise InputError(f"the results have no column {', '.join(map(repr, missing))}; "
                         f"they have {', '.join(map(str, frame.columns))}")
    values = {}
    for col in dict.fromkeys((metric, colour_by)):
        try:
            values[col] = pd.to_numeric(frame[col], errors="raise").astype(float).to_numpy()
        except (ValueError, TypeError) as exc:
            raise InputError(f"column {col!r} is not numeric ({exc})") from exc
    xs = _order(frame[x], x_order, x)
    ys = _order(frame[y], y_order, y)
    parts = _order(frame[split], split_order, split) if split else (None,)
    shape = (len(parts), len(ys), len(xs))
    value = np.full(shape, np.nan)
    colour = np.full(shape, np.nan)
    count = np.zeros(shape, dtype=np.int64)
    fn = np.median if stat == "median" else np.mean
    index = {"x": {v: i for i, v in enumerate(xs)}, "y": {v: i for i, v in enumerate(ys)},
             "p": {v: i for i, v in enumerate(parts)}}
    keys = zip(frame[split] if split else [None] * len(frame), frame[y], frame[x])
    cells: dict[tuple[int, int, int], list[int]] = {}
    for row, (p, yv, xv) in enumerate(keys):
        try:
            key = (index["p"][p], index["y"][yv], index["x"][xv])
        except (KeyError, TypeError):  # a label not drawn
            continue
        cells.setdefault(key, []).append(row)
    for key, rows in cells.items():
        v = values[metric][rows]
        v = v[~np.isnan(v)]
        c = values[colour_by][rows]
        c = c[~np.isnan(c)]
        count[key] = v.size
        if v.size:
            value[key] = fn(v)
        if c.size:
            colour[key] = fn(c)
    return Cells(x=xs, y=ys, parts=parts, value=value, colour_mos=colour, count=count, metric=metric,
                 colour_by=colour_by, stat=stat)


def _fmt(v: float, digits: int | None) -> str:
    if math.isnan(v):
        return "–"
    if digits is not None:
        return f"{v:.{digits}f}"
    return f"{v:.2f}" if abs(v) < 100 else f"{v:.0f}"


def heatmap(
    data: Any,
    x: str,
    y: str,
    *,
    metric: str = "mos",
    colour_by: str | None = None,
    split: str | None = None,
    stat: str = "median",
    x_order: Sequence[Any] | None = None,
    y_order: Sequence[Any] | None = None,
    split_order: Sequence[Any] | None = None,
    digits: int | None = None,
    title: str | None = None,
    show_counts: bool = False,
) -> Figure:
    """Draw the seed paper's heatmap of ``metric`` over the ``x`` × ``y`` settings.

    Each cell prints the statistic (default the median) of ``metric`` over the runs of
    that setting and is coloured by the P.800 category of the statistic of ``colour_by``
    (:data:`CATEGORY_COLOURS`); an empty cell is grey with a dash. With ``split`` the
    parts are stacked, sharing the x axis, each titled with its value.

    Parameters
    ----------
    data, x, y, metric, colour_by, split, stat, x_order, y_order, split_order
        As :func:`cell_table`.
    digits : int, optional
        Decimals printed in each cell (default 2, none from 100 up).
    title : str, optional
        The figure's title.
    show_counts : bool, default False
        Print each cell's number of runs under its value.

    Returns
    -------
    matplotlib.figure.Figure
        A figure not attached to pyplot (no global state): save it with
        ``fig.savefig(path)`` or :func:`qoe.plot.save`, or show it in a notebook.

    Raises
    ------
    InputError
        As :func:`cell_table`; or matplotlib is not installed (the ``plot`` extra).

    References
    ----------
    .. [1] C. Pujol et al., "A QoE Perspective on Sizing Network Buffers", ACM IMC 2014,
       Figures 6–11.
    """
    cells = cell_table(data, x, y, metric=metric, colour_by=colour_by, split=split, stat=stat, x_order=x_order,
                       y_order=y_order, split_order=split_order)
    from qoe.plot._mpl import new_figure  # noqa: PLC0415 - matplotlib is optional

    from matplotlib.colors import to_rgb  # noqa: PLC0415 - matplotlib is optional (the plot extra)
    from matplotlib.patches import Patch  # noqa: PLC0415

    n_parts, n_y, n_x = cells.value.shape
    fig = new_figure(figsize=(2.0 + 0.9 * n_x, 1.6 + 0.45 * n_y * n_parts + 0.3 * n_parts))
    axes = fig.subplots(n_parts, 1, squeeze=False, sharex=True, gridspec_kw={"height_ratios": [n_y] * n_parts})[:, 0]
    cats = cells.category()
    for i, ax in enumerate(axes):
        rgb = np.array([[to_rgb(CATEGORY_COLOURS.get(cats[i, j, k], _EMPTY)) for k in range(n_x)]
                        for j in range(n_y)])
        ax.imshow(rgb, aspect="auto", interpolation="nearest")
        for j in range(n_y):
            for k in range(n_x):
                text = _fmt(cells.value[i, j, k], digits)
                if show_counts and cells.count[i, j, k]:
                    text += f"\nn={cells.count[i, j, k]}"
                ax.text(k, j, text, ha="center", va="center", fontsize=9)
        ax.set_yticks(range(n_y), [str(v) for v in cells.y])
        ax.set_xticks(np.arange(-0.5, n_x), minor=True)
        ax.set_yticks(np.arange(-0.5, n_y), minor=True)
        ax.grid(which="minor", color="white", linewidth=1.5)
        ax.tick_params(which="minor", length=0)
        ax.set_ylabel(y)
        if split:
            ax.set_title(str(cells.parts[i]), loc="left", fontsize=9)
    axes[-1].set_xticks(range(n_x), [str(v) for v in cells.x])
    axes[-1].set_xlabel(x)
    handles = [Patch(facecolor=CATEGORY_COLOURS[c], edgecolor="grey", label=c) for c in reversed(ACR_LABELS)]
    fig.legend(handles=handles, loc="outside lower center", ncol=5, frameon=False, fontsize=8,
               title=f"colour: {cells.stat} {cells.colour_by} (P.800 category)", title_fontsize=8)
    fig.suptitle(title or f"{cells.stat} {cells.metric}")
    return fig


def read_results(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A results table written by ``qoe batch`` or :func:`qoe.batch.run` (or any table of runs).

    Parameters
    ----------
    path : str or path-like
        CSV (``.csv``, ``.csv.gz``), Parquet (``.parquet``, ``.pq``; needs pyarrow) or
        JSON records (``.json``, a list of objects as ``qoe score --format json`` prints).

    Returns
    -------
    pandas.DataFrame
        As :func:`qoe.report.read_table` reads it (empty cells missing, other text kept).

    Raises
    ------
    InputError
        The file is missing, empty, or not a table in a format named by its suffix.
    """
    frame = read_table(path)
    if frame.empty:
        raise InputError(f"{Path(path)}: the results table has no rows")
    return frame
