"""MOS scales and the mappings between them, shared by every scorer.

* :func:`r_to_mos` / :func:`mos_to_r` — the E-model's transmission rating R and the
  conversational MOS (ITU-T G.107 Annex B and its exact inverse, Appendix I).
* :func:`raw_to_mos_lqo` / :func:`mos_lqo_to_raw` — raw P.862 (PESQ) scores and MOS-LQO
  (ITU-T P.862.1 for narrow-band, P.862.2 for wide-band).
* :func:`acr_label`, :func:`g109_category`, :func:`g114_delay_class` — the category names
  used to colour results (P.800 ACR scale; G.109 R bands; G.114 one-way delay classes, as in
  the seed paper's Figures 4 and 6).

Every function is vectorised: it accepts a scalar or any array-like, broadcasts, and
returns a NumPy ``float64`` array of the same shape (0-d for a scalar input; call
``float()`` on it for a Python number).

References
----------
.. [1] ITU-T G.107 (06/2015), "The E-model: a computational model for use in transmission
   planning", Annex B (R → MOS) and Appendix I (MOS → R).
.. [2] ITU-T P.862.1 (11/2003), "Mapping function for transforming P.862 raw result scores
   to MOS-LQO", eq. (1) and (2).
.. [3] ITU-T P.862.2 (11/2007), "Wideband extension to Recommendation P.862", eq. (1).
.. [4] ITU-T G.109 (09/1999), "Definition of categories of speech transmission quality",
   Table 1.
.. [5] ITU-T G.114 (05/2003), "One-way transmission time", clause 3 and Figure 1.
.. [6] ITU-T P.800 (08/1996), Annex B, Absolute Category Rating listening-quality scale.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from qoe.errors import InputError

__all__ = [
    "as_floats",
    "r_to_mos",
    "mos_to_r",
    "raw_to_mos_lqo",
    "mos_lqo_to_raw",
    "P862_MAPPING",
    "acr_label",
    "g109_category",
    "g114_delay_class",
    "ACR_LABELS",
]

FloatArray = NDArray[np.float64]

# ITU-T G.107 (06/2015) Annex B, eq. (B-4): the limits of the R → MOS mapping.
_R_MIN, _R_MAX = 0.0, 100.0
_MOS_MIN, _MOS_MAX = 1.0, 4.5

# ITU-T P.862.1 (11/2003) eq. (1) and P.862.2 (11/2007) eq. (1):
#   MOS-LQO = lo + (hi - lo) / (1 + exp(slope * x + offset)).
P862_MAPPING: dict[str, tuple[float, float, float, float]] = {
    # mode: (lo, hi, slope, offset)
    "nb": (0.999, 4.999, -1.4945, 4.6607),  # P.862.1 (11/2003) eq. (1)
    "wb": (0.999, 4.999, -1.3669, 3.8224),  # P.862.2 (11/2007) eq. (1)
}

ACR_LABELS = ("bad", "poor", "fair", "good", "excellent")  # P.800 Annex B, scores 1..5


def as_floats(x: ArrayLike, name: str) -> FloatArray:
    """``x`` as an array of float64, for the models' numeric arguments.

    Parameters
    ----------
    x : array_like
        A number, or a sequence or array of numbers.
    name : str
        The argument's name, for the message.

    Returns
    -------
    numpy.ndarray of float64

    Raises
    ------
    InputError
        ``x`` holds something that is not a number (text, None, a mapping), named with ``name``.
    """
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number or an array of numbers; given {x!r}"[:300]) from None


def _as_float(x: ArrayLike, name: str) -> FloatArray:
    arr = as_floats(x, name)
    if np.isnan(arr).any():
        raise InputError(f"{name} contains NaN; given {name}={x!r}")
    return arr


def r_to_mos(r: ArrayLike) -> FloatArray:
    """Conversational MOS (MOS-CQE) from the transmission rating factor R.

    Parameters
    ----------
    r : array_like
        Transmission rating R (narrow-band scale, G.107). For a wide-band rating
        R_WB (G.107.1) divide by 1.29 first.

    Returns
    -------
    numpy.ndarray
        MOS in [1, 4.5], same shape as ``r``.

    Notes
    -----
    G.107 (06/2015) Annex B, eq. (B-4)::

        MOS = 1                                            for R < 0
        MOS = 1 + 0.035 R + R (R - 60) (100 - R) 7e-6       for 0 <= R <= 100
        MOS = 4.5                                          for R > 100

    For 0 < R < about 6.5 the polynomial dips slightly below 1 (minimum 0.9916 at R ≈ 3.1).
    A MOS is read on the 1–5 scale (P.800), so the result is clamped to 1 there: R in
    [0, 6.53] all map to MOS 1, and :func:`mos_to_r` gives 0 for MOS 1 (the round trip is
    exact from R ≈ 6.53 up).

    References
    ----------
    .. [1] ITU-T G.107 (06/2015), Annex B, eq. (B-4).

    Examples
    --------
    >>> round(float(r_to_mos(93.2062)), 4)
    4.4094
    """
    r = _as_float(r, "r")
    mos = 1.0 + 0.035 * r + r * (r - 60.0) * (100.0 - r) * 7e-6  # G.107 eq. (B-4)
    mos = np.where(r < _R_MIN, _MOS_MIN, np.maximum(mos, _MOS_MIN))  # never below 1 (the dip for 0 < R < 6.53)
    return np.where(r > _R_MAX, _MOS_MAX, mos)


def mos_to_r(mos: ArrayLike) -> FloatArray:
    """Transmission rating R from a conversational MOS: the exact inverse of :func:`r_to_mos`.

    Parameters
    ----------
    mos : array_like
        MOS on the 1..4.5 scale of G.107 Annex B. Values below 1 give R = 0 and values
        above 4.5 give R = 100 (the ends of the mapping).

    Returns
    -------
    numpy.ndarray
        R in [0, 100], same shape as ``mos``.

    Notes
    -----
    G.107 (06/2015) Appendix I gives the closed-form root of the cubic (B-4)::

        R = 20/3 * (8 - sqrt(226) * cos(h + pi/3))
        h = 1/3 * arctan2(18566 - 6750 MOS, 15 sqrt(-903522 + 1113960 MOS - 202500 MOS^2))

    written with a spreadsheet ``arctan2(x, y)``, i.e. the angle of the point (x, y). In
    NumPy's argument order that is ``np.arctan2(y, x)``; with the arguments swapped the
    round trip fails (tested in ``tests/test_mos.py``).

    References
    ----------
    .. [1] ITU-T G.107 (06/2015), Appendix I, eq. (I-1) and (I-2).

    Examples
    --------
    >>> round(float(mos_to_r(r_to_mos(93.2062))), 4)
    93.2062
    """
    mos = _as_float(mos, "mos")
    m = np.clip(mos, _MOS_MIN, _MOS_MAX)
    x = 18566.0 - 6750.0 * m  # G.107 Appendix I, eq. (I-2): first argument
    y = 15.0 * np.sqrt(-903522.0 + 1113960.0 * m - 202500.0 * m * m)  # second argument
    h = np.arctan2(y, x) / 3.0  # spreadsheet arctan2(x, y) == numpy arctan2(y, x)
    r = 20.0 / 3.0 * (8.0 - np.sqrt(226.0) * np.cos(h + np.pi / 3.0))  # eq. (I-1)
    r = np.where(mos <= _MOS_MIN, _R_MIN, r)
    return np.where(mos >= _MOS_MAX, _R_MAX, r)


def _mapping(mode: str) -> tuple[float, float, float, float]:
    try:
        return P862_MAPPING[mode]
    except KeyError:
        raise InputError(f"mode must be 'nb' (P.862.1) or 'wb' (P.862.2); given mode={mode!r}") from None


def raw_to_mos_lqo(raw: ArrayLike, mode: Literal["nb", "wb"] = "nb") -> FloatArray:
    """MOS-LQO from a raw P.862 score (P.862.1 narrow-band, P.862.2 wide-band).

    Parameters
    ----------
    raw : array_like
        Raw PESQ score (P.862 clause 10.2 output, about -0.5..4.5).
    mode : {"nb", "wb"}
        ``"nb"``: P.862.1 eq. (1); ``"wb"``: P.862.2 eq. (1).

    Returns
    -------
    numpy.ndarray
        MOS-LQO in (0.999, 4.999).

    References
    ----------
    .. [1] ITU-T P.862.1 (11/2003), eq. (1).
    .. [2] ITU-T P.862.2 (11/2007), eq. (1).

    Examples
    --------
    >>> round(float(raw_to_mos_lqo(4.5)), 4)
    4.5486
    """
    lo, hi, slope, offset = _mapping(mode)
    raw = _as_float(raw, "raw")
    return lo + (hi - lo) / (1.0 + np.exp(slope * raw + offset))


def mos_lqo_to_raw(mos_lqo: ArrayLike, mode: Literal["nb", "wb"] = "nb") -> FloatArray:
    """Raw P.862 score from MOS-LQO: the exact inverse of :func:`raw_to_mos_lqo`.

    Parameters
    ----------
    mos_lqo : array_like
        MOS-LQO strictly inside (0.999, 4.999).
    mode : {"nb", "wb"}
        Which mapping to invert (P.862.1 eq. (2) for ``"nb"``; the same algebra for P.862.2).

    Returns
    -------
    numpy.ndarray
        The raw score.

    Raises
    ------
    InputError
        If a value lies outside the open range of the mapping, where no raw score exists.

    References
    ----------
    .. [1] ITU-T P.862.1 (11/2003), eq. (2).
    """
    lo, hi, slope, offset = _mapping(mode)
    m = _as_float(mos_lqo, "mos_lqo")
    if np.any((m <= lo) | (m >= hi)):
        raise InputError(
            f"MOS-LQO must lie strictly between {lo} and {hi} to be inverted ({mode}); "
            f"given mos_lqo={mos_lqo!r}"
        )
    return (np.log((hi - lo) / (m - lo) - 1.0) - offset) / slope  # P.862.1 eq. (2)


def acr_label(mos: ArrayLike) -> NDArray[np.str_]:
    """Category name of a MOS on the P.800 ACR scale (5 excellent … 1 bad).

    A continuous MOS is given the label of the nearest ACR score, i.e. bins
    [1, 1.5), [1.5, 2.5), [2.5, 3.5), [3.5, 4.5), [4.5, 5].

    References
    ----------
    .. [1] ITU-T P.800 (08/1996), Annex B, Table B.1 (listening-quality scale).

    Examples
    --------
    >>> str(acr_label(4.41))
    'good'
    """
    mos = _as_float(mos, "mos")
    idx = np.clip(np.floor(mos + 0.5).astype(np.int64), 1, 5) - 1
    return np.asarray(ACR_LABELS, dtype=np.str_)[idx]


# ITU-T G.109 (09/1999) Table 1: lower R bound of each speech-transmission-quality category.
_G109_BOUNDS = (90.0, 80.0, 70.0, 60.0, 50.0)
_G109_NAMES = ("best", "high", "medium", "low", "poor", "not recommended")


def g109_category(r: ArrayLike) -> NDArray[np.str_]:
    """Speech transmission quality category of an R value (G.109 Table 1).

    ``best`` (R ≥ 90, users very satisfied), ``high`` (80–90, satisfied), ``medium``
    (70–80, some dissatisfied), ``low`` (60–70, many dissatisfied), ``poor`` (50–60, nearly
    all dissatisfied), and ``not recommended`` below 50.

    References
    ----------
    .. [1] ITU-T G.109 (09/1999), Table 1.
    """
    r = _as_float(r, "r")
    idx = np.searchsorted(-np.asarray(_G109_BOUNDS), -r, side="left")
    return np.asarray(_G109_NAMES, dtype=np.str_)[idx]


# ITU-T G.114 (05/2003) clause 3: below 150 ms most applications are not significantly
# affected; 400 ms should not be exceeded for general network planning.
G114_BOUNDS_MS = (150.0, 400.0)
_G114_NAMES = ("acceptable", "problematic", "unacceptable")


def g114_delay_class(one_way_ms: ArrayLike) -> NDArray[np.str_]:
    """One-way delay class after G.114, as coloured in the seed paper's Figure 4.

    ``acceptable`` (< 150 ms), ``problematic`` (150 ms to 400 ms inclusive), ``unacceptable``
    (> 400 ms).

    References
    ----------
    .. [1] ITU-T G.114 (05/2003), clause 3.
    .. [2] Pujol et al., "A QoE Perspective on Sizing Network Buffers", IMC 2014, §6, Fig. 4.
    """
    d = _as_float(one_way_ms, "one_way_ms")
    lo, hi = G114_BOUNDS_MS
    idx = np.where(d < lo, 0, np.where(d <= hi, 1, 2))
    return np.asarray(_G114_NAMES, dtype=np.str_)[idx]
