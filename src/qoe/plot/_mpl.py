"""matplotlib, imported when a figure is first made (it is the optional ``plot`` extra).

Figures are made with :class:`matplotlib.figure.Figure` directly, never through
``pyplot``: no global figure registry, no interactive backend, safe in worker processes.
"""

from __future__ import annotations

from typing import Any

from qoe.errors import InputError


def new_figure(**kwargs: Any):  # noqa: ANN201 - matplotlib is imported lazily
    """A new constrained-layout figure, or :class:`InputError` when matplotlib is missing."""
    try:
        from matplotlib.figure import Figure  # noqa: PLC0415 - matplotlib is optional (the plot extra)
    except ImportError as exc:
        raise InputError("drawing needs matplotlib: pip install 'qoe[plot]'") from exc
    return Figure(layout="constrained", **kwargs)
