"""The linear QoE of Yin et al. (SIGCOMM 2015) and the parameter sets of Yin et al. and Mao et al. (Pensieve).

For the chunks (segments) n = 1..N of a session played at bitrates R_n, with stall times T
(s) and a startup delay T_s (s) (Yin et al. 2015, §3, the QoE objective)::

    QoE = Σ_n q(R_n) − λ Σ_n |q(R_{n+1}) − q(R_n)| − μ Σ T − μ_s T_s

``q`` maps a bitrate to a quality. The parameter sets (each one :class:`QoEParams`, in
:data:`PRESETS`, overridable field by field with :meth:`QoEParams.replace`):

* Yin et al. 2015, §7 (evaluation setup), R in kbit/s and q(R) = R: "Balanced" λ = 1,
  μ = μ_s = 3000; "Avoid Instability" λ = 3, μ = μ_s = 3000; "Avoid Rebuffering" λ = 1,
  μ = μ_s = 6000 (a 1 s stall costs as much as 3 Mbit/s — resp. 6 Mbit/s — of bitrate for
  one chunk).
* Mao et al. 2017 (Pensieve), §5.1 (QoE metrics), R in Mbit/s, λ = 1, no separate startup
  term: QoE_lin q(R) = R, μ = 4.3; QoE_log q(R) = log(R / R_min) (R_min: the lowest
  bitrate of the ladder), μ = 2.66; QoE_hd: q maps {0.3, 0.75, 1.2, 1.85, 2.85, 4.3} Mbit/s
  to {1, 2, 3, 12, 15, 20}, μ = 8. qoe applies QoE_hd's table to any ladder as a step
  function (the score of the highest listed rate ≤ R, 0 below 0.3 Mbit/s) and, since
  Pensieve's formula has no startup term, sets μ_s = μ (the wait for the first chunk
  counted as rebuffering); set ``startup_penalty=0`` to leave it out.

Where the values come from: the papers' text could not be read here. The reference store
holds a copy of Yin et al.'s text (https://vdocuments.site/a-control-theoretic-approach-for-
dynamic-adaptive-video-2016-04-17-a-control-theoretic.html, found with the ``search`` tool,
corpus pages) but returns only its title page and abstract, not §7. Public MPC code derived
from the paper's setup uses ``LAMBDA = 1``, ``MU = MUs = 3000`` for its objective, which
agrees with "Balanced"; "Avoid Instability" and "Avoid Rebuffering" could not be checked
anywhere and are given as §7 is quoted in secondary sources, unverified. The Pensieve values
were cross-checked against the public code derived from Pensieve (REBUF_PENALTY 4.3 / 2.66
/ 8, HD_REWARD [1, 2, 3, 12, 15, 20] over VIDEO_BIT_RATE [300, 750, 1200, 1850, 2850,
4300] kbit/s).

References
----------
.. [1] X. Yin, A. Jindal, V. Sekar, B. Sinopoli, "A Control-Theoretic Approach for Dynamic
   Adaptive Video Streaming over HTTP", ACM SIGCOMM 2015, doi:10.1145/2785956.2787486.
.. [2] H. Mao, R. Netravali, M. Alizadeh, "Neural Adaptive Video Streaming with Pensieve",
   ACM SIGCOMM 2017, doi:10.1145/3098822.3098843.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qoe.errors import InputError

__all__ = ["QoEParams", "PRESETS", "linear_qoe", "quality"]


@dataclass(frozen=True)
class QoEParams:
    """One parameter set of the linear QoE.

    Attributes
    ----------
    name : str
    utility : {"linear", "log", "table"}
        q(R): R in ``unit``; log(R / R_min); or the step function of ``table``.
    unit_bps : float
        Bits per second of one unit of R (1000: kbit/s; 1e6: Mbit/s).
    smooth_penalty : float
        λ.
    rebuffer_penalty : float
        μ, per second of stall.
    startup_penalty : float
        μ_s, per second of startup delay.
    table : tuple of (float, float)
        (bitrate in ``unit``, quality) pairs for ``utility="table"``, ascending.
    source : str
        Where the values are published.
    """

    name: str
    utility: str
    unit_bps: float
    smooth_penalty: float
    rebuffer_penalty: float
    startup_penalty: float
    table: tuple[tuple[float, float], ...] = ()
    source: str = ""

    def __post_init__(self) -> None:
        if self.utility not in ("linear", "log", "table"):
            raise InputError(f"utility must be linear, log or table; given {self.utility!r}")
        if self.utility == "table" and not self.table:
            raise InputError("utility='table' needs a table of (bitrate, quality) pairs")
        for name in ("smooth_penalty", "rebuffer_penalty", "startup_penalty"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise InputError(f"{name} must be a finite number ≥ 0; given {v!r}")

    def replace(self, **changes: Any) -> QoEParams:
        """A copy with some values changed (an override of a published set: name it)."""
        return dataclasses.replace(self, **changes)


_PENSIEVE_HD = ((0.3, 1.0), (0.75, 2.0), (1.2, 3.0), (1.85, 12.0), (2.85, 15.0), (4.3, 20.0))

#: The published parameter sets (see the module notes for where each value is from).
PRESETS: dict[str, QoEParams] = {
    # Yin et al. 2015 §7: q(R) = R in kbit/s
    "yin-balanced": QoEParams("yin-balanced", "linear", 1e3, 1.0, 3000.0, 3000.0,
                              source="Yin et al. 2015 §7, Balanced"),
    "yin-avoid-instability": QoEParams("yin-avoid-instability", "linear", 1e3, 3.0, 3000.0, 3000.0,
                                       source="Yin et al. 2015 §7, Avoid Instability"),
    "yin-avoid-rebuffering": QoEParams("yin-avoid-rebuffering", "linear", 1e3, 1.0, 6000.0, 6000.0,
                                       source="Yin et al. 2015 §7, Avoid Rebuffering"),
    # Mao et al. 2017 §5.1: R in Mbit/s
    "pensieve-lin": QoEParams("pensieve-lin", "linear", 1e6, 1.0, 4.3, 4.3, source="Mao et al. 2017 §5.1, QoE_lin"),
    "pensieve-log": QoEParams("pensieve-log", "log", 1e6, 1.0, 2.66, 2.66, source="Mao et al. 2017 §5.1, QoE_log"),
    "pensieve-hd": QoEParams("pensieve-hd", "table", 1e6, 1.0, 8.0, 8.0, table=_PENSIEVE_HD,
                             source="Mao et al. 2017 §5.1, QoE_hd"),
}


def quality(bitrates_bps: Sequence[float], params: QoEParams, *, r_min_bps: float | None = None) -> list[float]:
    """q(R) of each bitrate (bit/s) under ``params``; ``r_min_bps``: R_min of the log utility."""
    out = []
    for r in bitrates_bps:
        x = r / params.unit_bps
        if params.utility == "linear":
            out.append(x)
        elif params.utility == "log":
            lo = (r_min_bps if r_min_bps else min(bitrates_bps)) / params.unit_bps
            out.append(math.log(x / lo) if x > 0 and lo > 0 else math.nan)
        else:
            q = 0.0
            for rate, score in params.table:
                if x + 1e-12 >= rate:
                    q = score
            out.append(q)
    return out


def linear_qoe(bitrates_bps: Sequence[float], stall_s: float, startup_s: float, *, params: QoEParams,
               r_min_bps: float | None = None) -> float:
    """The QoE of Yin et al. for chunks played at ``bitrates_bps``, total stall and startup times.

    Parameters
    ----------
    bitrates_bps : sequence of float
        R_n of each chunk in play order (bit/s).
    stall_s, startup_s : float
        Σ T (total stall time) and T_s (startup delay), s.
    params : QoEParams, keyword-only
        One of :data:`PRESETS` or an override.
    r_min_bps : float, keyword-only, optional
        R_min for ``utility="log"`` (default: the lowest of ``bitrates_bps``; give the
        ladder's lowest rung).

    Returns
    -------
    float

    Examples
    --------
    Three 4 s chunks at 1, 2 and 1 Mbit/s, a 0.5 s stall, 1 s startup, QoE_lin:
    (1 + 2 + 1) − 1·(abs(2 − 1) + abs(1 − 2)) − 4.3·0.5 − 4.3·1 = −4.45

    >>> round(linear_qoe([1e6, 2e6, 1e6], 0.5, 1.0, params=PRESETS["pensieve-lin"]), 6)
    -4.45
    """
    q = quality(bitrates_bps, params, r_min_bps=r_min_bps)
    total = sum(q)
    smooth = sum(abs(b - a) for a, b in zip(q, q[1:]))
    return total - params.smooth_penalty * smooth - params.rebuffer_penalty * stall_s - params.startup_penalty * startup_s
