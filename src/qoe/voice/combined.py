"""The seed paper's VoIP score: listening quality (PESQ) minus the E-model delay impairment.

Pujol et al. (IMC 2014) §7.1 combine a signal-based listening score with conversational
dynamics::

    z1 = R of the PESQ MOS-LQO      (MOS → R by the exact inverse of G.107 Annex B)
    z2 = Id of the mouth-to-ear delay (G.107 delay impairment)
    z  = max(0, z1 − z2)
    MOS = G.107 Annex B of z

A wide-band call (P.862.2 MOS-LQO, ``band="wb"``) is scored on the G.107.1 scale: z1 is
R_WB = 1.29 · R of the MOS-LQO (the inverse of G.107.1 Annex A, MOS from R_WB / 1.29), z2
the wide-band delay impairment Id,WB (:func:`qoe.voice.emodel.r_factor` with
``band="wb"``), and MOS from z / 1.29.

References
----------
.. [1] Pujol, Hohlfeld, Ciucu, Feldmann, Barford, "A QoE Perspective on Sizing Network
   Buffers", ACM IMC 2014, §7.1.
.. [2] ITU-T G.107 (06/2015), clause 7.4 (Id), Annex B and Appendix I (R ↔ MOS).
.. [3] ITU-T G.107.1, clause 7.4 (Id,WB) and Annex A (MOS from R_WB / 1.29).
"""

from __future__ import annotations

import warnings

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from typing import Literal

from qoe.errors import InputError
from qoe.report import as_dict
from qoe.mos import mos_to_r, r_to_mos
from qoe.voice.emodel import delay_impairment

# G.107.1 Annex A: MOS of a wide-band R from R_WB / 1.29 (the ratio of Ro,WB = 129 to 100).
_WB_TO_NB = 1.29

__all__ = ["CombinedScore", "combined_score"]


@dataclass(frozen=True, slots=True)
class CombinedScore:
    """Every term of the seed paper's combined VoIP score (arrays of the broadcast shape).

    Attributes
    ----------
    mos_lqo : ndarray
        The listening-quality input (P.862.1 MOS-LQO).
    mouth_to_ear_ms : ndarray
        The mouth-to-ear delay the delay impairment was computed for (``one_way_ms``, its
        old name, still reads it for one release, with a :class:`DeprecationWarning`).
    z1 : ndarray
        R of ``mos_lqo`` (G.107 Appendix I).
    z2 : ndarray
        Delay impairment Id (G.107 clause 7.4).
    z : ndarray
        max(0, z1 − z2).
    mos : ndarray
        MOS of z (G.107 Annex B; of z / 1.29 for wide-band, G.107.1 Annex A).
    band : {"nb", "wb"}
        ``"wb"``: z1, z2 and z are on G.107.1's 0..129 scale.
    """

    mos_lqo: NDArray[np.float64]
    mouth_to_ear_ms: NDArray[np.float64]
    z1: NDArray[np.float64]
    z2: NDArray[np.float64]
    z: NDArray[np.float64]
    mos: NDArray[np.float64]
    band: str = "nb"

    @property
    def one_way_ms(self) -> NDArray[np.float64]:
        """Deprecated: :attr:`mouth_to_ear_ms` (issue 21: one name per concept)."""
        warnings.warn("CombinedScore.one_way_ms is now CombinedScore.mouth_to_ear_ms; the old name goes in the "
                      "next release", DeprecationWarning, stacklevel=2)
        return self.mouth_to_ear_ms

    def to_dict(self) -> dict[str, Any]:
        """Fields as plain Python values (numbers, or nested lists for arrays)."""
        return as_dict(self)


def combined_score(
    mos_lqo: ArrayLike,
    mouth_to_ear_ms: ArrayLike | None = None,
    *,
    band: Literal["nb", "wb"] = "nb",
    **emodel_params: ArrayLike,
) -> CombinedScore:
    """Combined listening + delay score of Pujol et al. (IMC 2014) §7.1.

    Parameters
    ----------
    mos_lqo : array_like
        Listening quality as P.862.1 MOS-LQO (e.g. ``qoe.voice.pesq(...).mos_lqo``).
    mouth_to_ear_ms : array_like
        Mouth-to-ear delay in ms: network one-way delay plus jitter-buffer and
        packetisation delay (required; ``one_way_ms=``, its old spelling, works for one
        release with a :class:`DeprecationWarning`).
    band : {"nb", "wb"}, keyword-only
        ``"nb"``: a P.862 MOS-LQO scored with G.107. ``"wb"``: a P.862.2 MOS-LQO scored on
        the G.107.1 wide-band scale (see the module docstring).
    **emodel_params : array_like
        Passed to :func:`qoe.voice.emodel.delay_impairment` (e.g. ``telr``, ``s_t``, ``m_t``).

    Returns
    -------
    CombinedScore

    Examples
    --------
    A clean call (MOS-LQO 4.0) over a bloated uplink (1 s one way):

    >>> s = combined_score(4.0, 1000.0)
    >>> round(float(s.z1), 1), round(float(s.z2), 1), round(float(s.mos), 2)
    (79.4, 54.3, 1.42)
    """
    if "one_way_ms" in emodel_params:
        if mouth_to_ear_ms is not None:
            raise InputError("ambiguous delay: both mouth_to_ear_ms and its deprecated spelling one_way_ms given")
        warnings.warn("'one_way_ms' is now 'mouth_to_ear_ms'; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        mouth_to_ear_ms = emodel_params.pop("one_way_ms")
    if mouth_to_ear_ms is None:
        raise InputError("combined_score needs mouth_to_ear_ms, the mouth-to-ear delay in ms")
    m = np.asarray(mos_lqo, dtype=np.float64)
    d = np.asarray(mouth_to_ear_ms, dtype=np.float64)
    if np.isnan(m).any() or ((m < 1.0) | (m > 5.0)).any():
        raise InputError(f"mos_lqo must lie in [1, 5]; given {mos_lqo!r}")
    if band not in ("nb", "wb"):
        raise InputError(f"band must be 'nb' (G.107) or 'wb' (G.107.1); given band={band!r}")
    # G.107.1 Annex A: MOS = MOS_NB(R_WB / 1.29), so R_WB = 1.29 · R_NB(MOS)
    scale = _WB_TO_NB if band == "wb" else 1.0
    z1 = scale * mos_to_r(np.minimum(m, 4.5))  # Annex B tops out at 4.5 (R = 100)
    z2 = delay_impairment(d, band=band, **emodel_params)
    z = np.maximum(0.0, z1 - z2)  # Pujol et al. §7.1
    shape = np.broadcast_shapes(m.shape, d.shape, z.shape)
    b = lambda v: np.broadcast_to(v, shape)  # noqa: E731
    return CombinedScore(mos_lqo=b(m), mouth_to_ear_ms=b(d), z1=b(z1), z2=b(z2), z=b(z), mos=b(r_to_mos(z / scale)),
                         band=band)
