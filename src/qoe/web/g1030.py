"""ITU-T G.1030 web-browsing opinion model: page load time → MOS, vectorised.

G.1030 models the opinion of a user who retrieves information from the web as a
logarithmic function of the waiting time. For a single page (the "one-page" case used by
Pujol et al., IMC 2014, §9.1) the score falls linearly in ln(PLT) from 5 at a minimum
load time to 1 at a maximum load time, and is clipped to [1, 5] outside::

    MOS(t) = 5 − 4 · ln(t / t_min) / ln(t_max / t_min)

The two bounds depend on the network context. The seed paper uses t_max = 6 s and
t_min = 0.56 s for its access-network testbed and 0.85 s for its backbone testbed (the
fastest page loads each testbed could deliver, set by its RTT): the presets ``access``
and ``backbone``.

References
----------
.. [1] ITU-T G.1030 (11/2005), "Estimating end-to-end performance in IP networks for data
   applications", Annex A (opinion model for web browsing, logarithmic relation between
   session time and opinion score).
.. [2] Pujol, Hohlfeld, Ciucu, Feldmann, Barford, "A QoE Perspective on Sizing Network
   Buffers", ACM IMC 2014, §9.1, doi:10.1145/2663716.2663730.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
from numpy.typing import ArrayLike, NDArray

from qoe.errors import InputError
from qoe.mos import as_floats

__all__ = ["PRESETS", "mos", "plt_for_mos", "bounds"]

FloatArray = NDArray[np.float64]

#: (t_min, t_max) in seconds: Pujol et al. (IMC 2014) §9.1, one-page G.1030 model.
PRESETS: Mapping[str, tuple[float, float]] = MappingProxyType(
    {
        "access": (0.56, 6.0),  # §9.1: fastest PLT of the access testbed → 5; 6 s → 1
        "backbone": (0.85, 6.0),  # §9.1: fastest PLT of the backbone testbed (RTT 60 ms) → 5
    }
)

_MOS_BEST, _MOS_WORST = 5.0, 1.0  # G.1030 Annex A: 5 (excellent) … 1 (bad)


def bounds(
    preset: str | None = "access", *, t_min: float | None = None, t_max: float | None = None
) -> tuple[float, float]:
    """Resolve ``(t_min, t_max)`` from a preset and/or explicit bounds (explicit wins).

    Raises
    ------
    InputError
        Unknown preset, no bounds at all, non-positive bounds or ``t_min >= t_max``.
    """
    lo, hi = (None, None)
    if preset is not None:
        try:
            lo, hi = PRESETS[preset]
        except KeyError:
            raise InputError(f"unknown G.1030 preset {preset!r}; known presets: {', '.join(PRESETS)}") from None
    lo = lo if t_min is None else float(t_min)
    hi = hi if t_max is None else float(t_max)
    if lo is None or hi is None:
        raise InputError("give a preset or both t_min and t_max (seconds)")
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo <= 0 or hi <= lo:
        raise InputError(f"G.1030 bounds must satisfy 0 < t_min < t_max; given t_min={lo!r}, t_max={hi!r}")
    return lo, hi


def mos(
    plt_s: ArrayLike,
    *,
    preset: str | None = "access",
    t_min: float | None = None,
    t_max: float | None = None,
) -> FloatArray:
    """MOS of page load times, G.1030 one-page logarithmic model.

    Parameters
    ----------
    plt_s : array_like
        Page load time(s) in seconds, >= 0.
    preset : {"access", "backbone"} or None
        Bounds from the seed paper (see :data:`PRESETS`). ``None`` requires both bounds.
    t_min, t_max : float, optional
        Override the preset: load time scored 5 and load time scored 1 (seconds).

    Returns
    -------
    numpy.ndarray
        MOS in [1, 5], same shape as ``plt_s``.

    Raises
    ------
    InputError
        Negative or NaN load time, or invalid bounds.

    References
    ----------
    .. [1] ITU-T G.1030 (11/2005), Annex A.
    .. [2] Pujol et al., IMC 2014, §9.1.

    Examples
    --------
    >>> [round(float(m), 3) for m in mos([0.56, 1.0, 6.0])]
    [5.0, 4.022, 1.0]
    """
    lo, hi = bounds(preset, t_min=t_min, t_max=t_max)
    t = as_floats(plt_s, "page load time")
    if np.isnan(t).any():
        raise InputError("page load time contains NaN")
    if (t < 0).any():
        raise InputError(f"page load time must be >= 0 s; given {t[t < 0].flat[0]!r}")
    with np.errstate(divide="ignore"):  # t = 0 → ln 0 = −inf → clipped to 5
        score = _MOS_BEST - (_MOS_BEST - _MOS_WORST) * np.log(t / lo) / np.log(hi / lo)
    return np.clip(score, _MOS_WORST, _MOS_BEST)


def plt_for_mos(
    score: ArrayLike,
    *,
    preset: str | None = "access",
    t_min: float | None = None,
    t_max: float | None = None,
) -> FloatArray:
    """Page load time (s) that the model scores ``score``: the inverse of :func:`mos` on [1, 5].

    Examples
    --------
    >>> round(float(plt_for_mos(3.0, preset="backbone")), 4)
    2.2583
    """
    lo, hi = bounds(preset, t_min=t_min, t_max=t_max)
    m = np.asarray(score, dtype=np.float64)
    if np.isnan(m).any() or ((m < _MOS_WORST) | (m > _MOS_BEST)).any():
        raise InputError(f"MOS must lie in [1, 5] to be inverted; given {score!r}")
    return lo * np.exp((_MOS_BEST - m) / (_MOS_BEST - _MOS_WORST) * np.log(hi / lo))
