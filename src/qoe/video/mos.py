"""PSNR / SSIM → MOS tables for video, vectorised.

The seed paper (Pujol et al., IMC 2014, §8.1) maps the PSNR and SSIM of each frame to the
five-point MOS scale "according to [49]" and reports medians. [49] is Zinner, Abboud,
Hohlfeld, Hossfeld and Tran-Gia (ITC-SS 2010); the table itself is given in Zinner,
Hohlfeld, Abboud and Hossfeld, "Impact of frame rate and resolution on objective QoE
metrics" (QoMEX 2010), as reproduced in later work (the values below were checked against
secondary sources, not against a copy of the paper):

=====  ==============  ===============
MOS    PSNR (dB)       SSIM
=====  ==============  ===============
5      ≥ 45            ≥ 0.99
4      33 – < 45       0.95 – < 0.99
3      27.4 – < 33     0.88 – < 0.95
2      18.7 – < 27.4   0.5 – < 0.88
1      < 18.7          < 0.5
=====  ==============  ===============

A value on a boundary takes the higher score (PSNR 45 → 5). EvalVid's PSNR table (Klaue,
Rathke and Wolisz 2003) is the other common one: > 37 → 5, 31–37 → 4, 25–31 → 3,
20–25 → 2, < 20 → 1; its top class is strict ("> 37"), so here a boundary value takes the
lower score (PSNR 37 → 4). PSNR +inf (identical frames) scores 5 in both; NaN stays NaN.

References
----------
.. [1] T. Zinner, O. Hohlfeld, O. Abboud, T. Hossfeld, "Impact of frame rate and resolution on
   objective QoE metrics", 2nd Int. Workshop on Quality of Multimedia Experience (QoMEX), 2010.
.. [2] T. Zinner, O. Abboud, O. Hohlfeld, T. Hossfeld, P. Tran-Gia, "Towards QoE management for
   scalable video streaming", 21st ITC Specialist Seminar, 2010 (the seed paper's [49]).
.. [3] J. Klaue, B. Rathke, A. Wolisz, "EvalVid – A framework for video transmission and quality
   evaluation", Computer Performance Evaluation (TOOLS 2003), LNCS 2794, PSNR → MOS table.
.. [4] Pujol, Hohlfeld, Ciucu, Feldmann, Barford, "A QoE Perspective on Sizing Network Buffers",
   ACM IMC 2014, §8.1, doi:10.1145/2663716.2663730.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from numpy.typing import ArrayLike, NDArray

from qoe.errors import InputError

__all__ = ["MosTable", "PSNR_TABLES", "SSIM_TABLES", "psnr_to_mos", "ssim_to_mos"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class MosTable:
    """A step mapping from a metric to MOS 1..5.

    Attributes
    ----------
    thresholds : tuple of float
        Lower bounds of MOS 2, 3, 4, 5 (ascending).
    inclusive : bool
        True: a value equal to a bound takes the higher score (``≥``); False: the lower (``>``).
    source : str
        Where the table comes from.
    """

    thresholds: tuple[float, float, float, float]
    inclusive: bool
    source: str

    def __call__(self, values: ArrayLike) -> FloatArray:
        """MOS of each value (float64 array of the input's shape; NaN stays NaN)."""
        x = np.asarray(values, dtype=np.float64)
        side = "right" if self.inclusive else "left"
        score = 1.0 + np.searchsorted(np.asarray(self.thresholds), x, side=side)
        return np.where(np.isnan(x), np.nan, score)


#: PSNR (dB) → MOS tables by name.
PSNR_TABLES: Mapping[str, MosTable] = MappingProxyType(
    {
        # Zinner et al., QoMEX 2010: ≥ 18.7 → 2, ≥ 27.4 → 3, ≥ 33 → 4, ≥ 45 → 5.
        "zinner2010": MosTable((18.7, 27.4, 33.0, 45.0), True, "Zinner et al., QoMEX 2010"),
        # Klaue et al. 2003 (EvalVid): > 20 → 2, > 25 → 3, > 31 → 4, > 37 → 5.
        "evalvid": MosTable((20.0, 25.0, 31.0, 37.0), False, "Klaue et al. 2003 (EvalVid)"),
    }
)

#: SSIM → MOS tables by name.
SSIM_TABLES: Mapping[str, MosTable] = MappingProxyType(
    {
        # Zinner et al., QoMEX 2010: ≥ 0.5 → 2, ≥ 0.88 → 3, ≥ 0.95 → 4, ≥ 0.99 → 5.
        "zinner2010": MosTable((0.5, 0.88, 0.95, 0.99), True, "Zinner et al., QoMEX 2010"),
    }
)


def _table(tables: Mapping[str, MosTable], table: str | MosTable, what: str) -> MosTable:
    if isinstance(table, MosTable):
        return table
    try:
        return tables[table]
    except (KeyError, TypeError):
        raise InputError(f"unknown {what} → MOS table {table!r}; known: {', '.join(tables)}") from None


def psnr_to_mos(psnr_db: ArrayLike, *, table: str | MosTable = "zinner2010") -> FloatArray:
    """MOS (1..5) of PSNR values in dB.

    Parameters
    ----------
    psnr_db : array_like
        PSNR per frame (or per clip), dB; +inf (identical frames) scores 5, NaN stays NaN.
    table : {"zinner2010", "evalvid"} or MosTable
        Zinner et al. 2010 (the seed paper's mapping, default) or EvalVid's.

    Returns
    -------
    numpy.ndarray
        float64 MOS, same shape as the input (0-d for a scalar).

    Examples
    --------
    >>> psnr_to_mos([45.0, 44.99, 33.0, 27.4, 18.7, 18.69, float("inf")]).tolist()
    [5.0, 4.0, 4.0, 3.0, 2.0, 1.0, 5.0]
    >>> psnr_to_mos([37.0, 37.01, 20.0], table="evalvid").tolist()
    [4.0, 5.0, 1.0]
    """
    return _table(PSNR_TABLES, table, "PSNR")(psnr_db)


def ssim_to_mos(ssim_values: ArrayLike, *, table: str | MosTable = "zinner2010") -> FloatArray:
    """MOS (1..5) of SSIM values, Zinner et al. 2010.

    Examples
    --------
    >>> ssim_to_mos([1.0, 0.99, 0.95, 0.9499, 0.88, 0.5, 0.4999]).tolist()
    [5.0, 5.0, 4.0, 3.0, 3.0, 2.0, 1.0]
    """
    return _table(SSIM_TABLES, table, "SSIM")(ssim_values)
