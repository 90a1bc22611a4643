"""The result of a PESQ measurement: the score and the facts behind it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

__all__ = ["PesqResult"]


@dataclass(frozen=True)
class PesqResult:
    """Score of one reference/degraded pair by ITU-T P.862 (nb) or P.862.2 (wb).

    Attributes
    ----------
    mos_lqo : float
        MOS-LQO: P.862.1 mapping of the raw score in narrow-band mode, P.862.2 mapping in
        wide-band mode.
    raw : float or None
        Raw P.862 score (clause 10.2.16), about -0.5 to 4.5; ``None`` in wide-band mode,
        whose only output P.862.2 defines is MOS-LQO.
    mode : {"nb", "wb"}
        Narrow-band (P.862, IRS receive filter) or wide-band (P.862.2).
    fs : int
        Sample rate of both signals, Hz.
    d_sym, d_asym : float
        Symmetric and asymmetric disturbance aggregated over the file (clause 10.2.15);
        the internal score is ``4.5 - 0.1 * d_sym - 0.0309 * d_asym`` in both modes.
    ref_level_dbov, deg_level_dbov : float
        Level of each signal over the blocks its PESQ voice-activity detector marks as
        speech (clause 10.1.3.1), in dB relative to a full-scale square wave (±1.0 for float
        input, ±32768 for int16). This is PESQ's own view of the active speech level, not
        an ITU-T P.56 measurement.
    utterance_start_s, utterance_end_s : tuple of float
        Extent of each utterance found by the time alignment, seconds into the reference.
    utterance_delay_ms : tuple of float
        Delay of the degraded signal for each utterance (positive: it lags), ms.
    frame_time_s : numpy.ndarray
        Start of each perceptual frame (32 ms, 16 ms hop) in the reference, seconds.
    frame_disturbance, frame_disturbance_asym : numpy.ndarray
        Symmetric and asymmetric disturbance of each frame (clause 10.2.11, after the
        soft-frame weighting and the limit of 45): where the degradation lies.
    """

    mos_lqo: float
    raw: float | None
    mode: Literal["nb", "wb"]
    fs: int
    d_sym: float
    d_asym: float
    ref_level_dbov: float
    deg_level_dbov: float
    utterance_start_s: tuple[float, ...]
    utterance_end_s: tuple[float, ...]
    utterance_delay_ms: tuple[float, ...]
    frame_time_s: np.ndarray = field(repr=False)
    frame_disturbance: np.ndarray = field(repr=False)
    frame_disturbance_asym: np.ndarray = field(repr=False)

    def to_dict(self, *, frames: bool = True) -> dict[str, Any]:
        """Plain-Python view (floats, lists), ready for JSON; ``frames=False`` drops the profile."""
        out: dict[str, Any] = {
            "mos_lqo": self.mos_lqo,
            "raw": self.raw,
            "mode": self.mode,
            "fs": self.fs,
            "d_sym": self.d_sym,
            "d_asym": self.d_asym,
            "ref_level_dbov": self.ref_level_dbov,
            "deg_level_dbov": self.deg_level_dbov,
            "utterances": len(self.utterance_delay_ms),
            "utterance_start_s": list(self.utterance_start_s),
            "utterance_end_s": list(self.utterance_end_s),
            "utterance_delay_ms": list(self.utterance_delay_ms),
        }
        if frames:
            out["frame_time_s"] = self.frame_time_s.tolist()
            out["frame_disturbance"] = self.frame_disturbance.tolist()
            out["frame_disturbance_asym"] = self.frame_disturbance_asym.tolist()
        return out

    def frame_records(self) -> list[dict[str, Any]]:
        """One flat record per frame of the disturbance profile (where the degradation lies)."""
        return [
            {"time_s": float(t), "disturbance": float(d), "disturbance_asym": float(a)}
            for t, d, a in zip(self.frame_time_s, self.frame_disturbance, self.frame_disturbance_asym)
        ]
