"""Network-side (no-reference) voice scores per time window: G.107 and Cole & Rosenbluth.

Without a reference signal, a call's quality is estimated from what the network did to
it: the loss after the jitter buffer (with its burstiness), the codec, and the
mouth-to-ear delay. A single mean over a whole call hides the bad moments users
remember, so :func:`windowed_scores` scores consecutive windows (default 10 s) and reports
the whole-call score next to the worst and mean window.

References
----------
.. [1] ITU-T G.107 (06/2015), clause 7 (R from Ppl, BurstR, Ie, Bpl and delays).
.. [2] ITU-T G.107.1 (06/2019), wide-band E-model (``band="wb"``).
.. [3] R. G. Cole and J. H. Rosenbluth, "Voice over IP performance monitoring",
   ACM SIGCOMM CCR 31(2), 2001.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from qoe.errors import InputError, QoEWarning
from qoe.report import as_dict
from qoe.voice import emodel
from qoe.rtp.lossmodel import loss_pattern

__all__ = ["WindowScores", "windowed_scores", "window_ranges"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class WindowScores:
    """Network-side scores of one stream, per window and for the whole stream.

    Per-window arrays have one entry per window (in time order).

    Attributes
    ----------
    window_s : float
        Window length in seconds.
    start_s : ndarray
        Start of each window, seconds from the first packet.
    packets, lost : ndarray
        Packets expected and lost (network + late) in each window.
    ppl, burst_r : ndarray
        Loss probability (%) and G.107 BurstR in each window.
    delay_ms : ndarray
        Mean mouth-to-ear delay of the received packets in each window (NaN if none).
    r, mos : ndarray
        G.107 R and MOS per window.
    mos_simplified : ndarray
        Cole & Rosenbluth MOS per window.
    overall : dict
        The same quantities over the whole stream (``r``, ``mos``, ``mos_simplified``,
        ``ppl``, ``burst_r``, ``delay_ms``), plus ``mos_min``/``mos_mean`` over windows.
    codec : str
        The G.113 preset used for Ie/Bpl.
    band : {"nb", "wb"}
        ``"nb"``: G.107 (R on 0..100); ``"wb"``: G.107.1 (R_WB on 0..129, MOS from R_WB/1.29).
    """

    window_s: float
    start_s: FloatArray
    packets: NDArray[np.int64]
    lost: NDArray[np.int64]
    ppl: FloatArray
    burst_r: FloatArray
    delay_ms: FloatArray
    r: FloatArray
    mos: FloatArray
    mos_simplified: FloatArray
    overall: dict[str, float]
    codec: str
    band: str = "nb"

    def to_dict(self) -> dict[str, Any]:
        """Fields as plain Python values (per-window arrays as lists)."""
        return as_dict(self)


_SIMPLIFIED_CODEC = {"g.711": "G.711", "g.711-plc": "G.711", "g.729a+vad": "G.729A"}


def _score(lost: np.ndarray, delay: np.ndarray, codec: str, params: dict[str, Any],
           band: str = "nb") -> dict[str, float]:
    lp = loss_pattern(lost)
    received = delay[~lost]
    d = float(np.nanmean(received)) if received.size and not np.isnan(received).all() else float("nan")
    d_e = 0.0 if np.isnan(d) else d
    burst_r = lp.burst_r if np.isfinite(lp.burst_r) and lp.burst_r > 0 else 1.0
    if band == "wb":  # G.107.1 (06/2019) 7.5: Ie,eff,WB has no BurstR; it is reported, not used
        res = emodel.r_factor(codec=codec, band="wb", ppl=lp.ppl, mouth_to_ear_ms=d_e, out_of_range="ignore", **params)
    else:
        res = emodel.r_factor(codec=codec, ppl=lp.ppl, burst_r=burst_r, mouth_to_ear_ms=d_e, out_of_range="ignore",
                              **params)
    simple_codec = _SIMPLIFIED_CODEC.get(codec.lower()) if band == "nb" else None
    simple = (
        float(emodel.simplified_r(d_e, lp.ppl / 100.0, codec=simple_codec).mos)  # type: ignore[arg-type]
        if simple_codec
        else float("nan")
    )
    return {
        "packets": lp.packets, "lost": lp.lost, "ppl": lp.ppl, "burst_r": burst_r, "delay_ms": d,
        "r": float(res.r), "mos": float(res.mos), "mos_simplified": simple,
    }


def windowed_scores(
    send_time_s: ArrayLike,
    lost: ArrayLike,
    delay_ms: ArrayLike,
    *,
    codec: str = "G.711-plc",
    band: Literal["nb", "wb"] = "nb",
    window_s: float = 10.0,
    out_of_range: Literal["warn", "ignore"] = "warn",
    **emodel_params: Any,
) -> WindowScores:
    """G.107 and Cole & Rosenbluth scores of a stream, per window and overall.

    Parameters
    ----------
    send_time_s : array_like
        Sending time of every expected packet in seconds (e.g. RTP timestamp / clock rate,
        or extended sequence number × packet time), in sending order.
    lost : array_like of bool
        ``True`` for packets lost in the network or discarded as late by the jitter buffer.
    delay_ms : array_like
        Mouth-to-ear delay of each packet in ms (network one-way + jitter buffer +
        packetisation); ignored (may be NaN) for lost packets.
    codec : str
        G.113 preset for Ie and Bpl (see :data:`qoe.voice.emodel.CODECS`, or
        :data:`qoe.voice.emodel.CODECS_WB` with ``band="wb"``). The simplified estimate
        exists for G.711 and G.729A+VAD only (NaN otherwise, and always for wide-band).
    band : {"nb", "wb"}
        ``"nb"`` scores with G.107; ``"wb"`` with G.107.1 (a wide-band codec: R_WB on the
        0..129 scale, no BurstR in Ie,eff,WB; the measured BurstR is still reported).
    window_s : float
        Window length in seconds (default 10 s).
    out_of_range : {"warn", "ignore"}
        Inputs outside G.107 Table 3's permitted ranges in any window (a delay past 500 ms,
        a loss past 20 %): one :class:`~qoe.errors.QoEWarning` per parameter for the whole
        stream (default), or none (:func:`window_ranges` lists them).
    **emodel_params
        Other G.107 parameters (e.g. ``a``, ``telr``).

    Returns
    -------
    WindowScores

    Raises
    ------
    InputError
        Mismatched lengths, an empty stream or a non-positive window.
    """
    t = np.asarray(send_time_s, dtype=np.float64)
    m = np.asarray(lost, dtype=bool)
    d = np.asarray(delay_ms, dtype=np.float64)
    if not (t.ndim == m.ndim == d.ndim == 1) or not (t.size == m.size == d.size):
        raise InputError(
            f"send_time_s, lost and delay_ms must be 1-D of equal length; given {t.shape}, {m.shape}, {d.shape}"
        )
    if t.size == 0:
        raise InputError("no packets to score")
    if not window_s > 0:
        raise InputError(f"window_s must be > 0; given {window_s!r}")
    if band not in ("nb", "wb"):
        raise InputError(f"band must be 'nb' (G.107) or 'wb' (G.107.1); given band={band!r}")
    emodel.codec(codec, band=band)  # validate early, with the list of known codecs in the message
    order = np.argsort(t, kind="stable")
    t, m, d = t[order] - t[order][0], m[order], d[order]
    idx = np.floor(t / window_s).astype(np.int64)
    rows = [_score(m[idx == w], d[idx == w], codec, emodel_params, band) for w in np.unique(idx)]
    overall = _score(m, d, codec, emodel_params, band)
    mos = np.array([r["mos"] for r in rows])
    overall.update(mos_min=float(mos.min()), mos_mean=float(mos.mean()))

    def col(name: str, dtype: Any = np.float64) -> np.ndarray:
        return np.array([r[name] for r in rows], dtype=dtype)

    scores = WindowScores(
        window_s=float(window_s),
        start_s=np.unique(idx).astype(np.float64) * window_s,
        packets=col("packets", np.int64),
        lost=col("lost", np.int64),
        ppl=col("ppl"),
        burst_r=col("burst_r"),
        delay_ms=col("delay_ms"),
        r=col("r"),
        mos=mos,
        mos_simplified=col("mos_simplified"),
        overall=overall,
        codec=emodel.codec(codec, band=band).name,
        band=band,
    )
    if out_of_range == "warn":
        for message in window_ranges(scores, **emodel_params):
            warnings.warn(message, QoEWarning, stacklevel=2)
    return scores


def window_ranges(scores: WindowScores, **emodel_params: Any) -> tuple[str, ...]:
    """The E-model inputs of a stream's windows outside G.107 Table 3's permitted ranges.

    Parameters
    ----------
    scores : WindowScores
        From :func:`windowed_scores`.
    **emodel_params
        The G.107 parameters it was given.

    Returns
    -------
    tuple of str
        :func:`qoe.voice.emodel.outside_ranges` of every window's loss and delay at once:
        one message per parameter, empty when all are inside.
    """
    delay = np.nan_to_num(scores.delay_ms, nan=0.0)
    if scores.band == "wb":  # no BurstR in G.107.1
        return emodel.outside_ranges(codec=scores.codec, band="wb", ppl=scores.ppl, mouth_to_ear_ms=delay, **emodel_params)
    return emodel.outside_ranges(codec=scores.codec, ppl=scores.ppl, burst_r=scores.burst_r, mouth_to_ear_ms=delay,
                                 **emodel_params)
