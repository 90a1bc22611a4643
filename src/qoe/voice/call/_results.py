"""The results of the call scorer: frozen dataclasses, and the columns of their flat views.

Import these names from :mod:`qoe.voice.call`, whose docstring says how each figure is
computed. Each result has ``to_dict()`` (nested plain Python, for JSON);
:class:`DirectionScore` also has ``to_record()``, ``tables()``, ``identity()`` and
``label``, the interface :class:`qoe.report.Report` serialises from. The conversions
themselves (plain values, the brief projection, JSON, CSV) are :mod:`qoe.report`'s.

References
----------
.. [1] Pujol, Hohlfeld, Ciucu, Feldmann, Barford, "A QoE Perspective on Sizing Network
   Buffers", ACM IMC 2014, §7.1 (z1, z2, z), §7.2 (user talks / user listens).
.. [2] ITU-T G.107 (06/2015), clause 7.4 (Id), 7.5 (Ie,eff, BurstR), Annex B (R → MOS).
.. [3] ITU-T P.862 (02/2001) and P.862.1 (11/2003) (MOS-LQO).
.. [4] R. G. Cole and J. H. Rosenbluth, "Voice over IP performance monitoring", ACM
   SIGCOMM CCR 31(2), 2001.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from qoe.report import as_dict, to_plain
from qoe.report import brief as _brief

if TYPE_CHECKING:  # pragma: no cover
    from qoe.voice.netscore import WindowScores

__all__ = [
    "USER_TALKS",
    "USER_LISTENS",
    "Direction",
    "DelayTerms",
    "NetworkScore",
    "PlayScore",
    "FullReferenceScore",
    "DirectionScore",
    "CallScore",
]

# The seed paper's two directions of a call (Pujol et al. 2014, §7.2), from the user's side.
USER_TALKS = "user talks"
USER_LISTENS = "user listens"
Direction = Literal["user talks", "user listens"]


def _ssrc(ssrc: int) -> str:
    """An SSRC as results show it: ``0x`` and eight hex digits."""
    return f"0x{ssrc:08x}"


@dataclass(frozen=True, slots=True)
class DelayTerms:
    """The mouth-to-ear delay of one direction and its parts (ms, means over played packets).

    Attributes
    ----------
    packetisation_ms : float
        One packet's duration (G.114 Annex A.2).
    network_ms : float
        Mean network one-way delay.
    network_min_ms, network_max_ms : float
        Its extremes.
    network_source : str
        ``"measured"`` (two captures), ``"rtcp"`` (RTT/2 + variation), ``"given"``
        (``network_delay_ms`` + variation) or ``"assumed"`` (0 ms + variation).
    buffer_ms : float
        Mean time a played packet waited in the jitter buffer.
    mouth_to_ear_ms : float
        Mean packetisation + network + buffer delay of this direction.
    mouth_to_ear_max_ms : float
        Its maximum.
    basis : {"conversation", "direction"}
        Which delay the delay impairment uses (:mod:`qoe.voice.call`).
    ta_ms : float
        The delay the delay impairment uses: this direction's mouth-to-ear delay, or the
        mean of both directions' (``basis="conversation"``).
    id_ : float
        G.107 delay impairment Id at ``ta_ms`` (the seed paper's z2).
    """

    packetisation_ms: float
    network_ms: float
    network_min_ms: float
    network_max_ms: float
    network_source: str
    buffer_ms: float
    mouth_to_ear_ms: float
    mouth_to_ear_max_ms: float
    basis: str
    ta_ms: float
    id_: float

    def to_dict(self) -> dict[str, Any]:
        """Fields as plain Python values."""
        return as_dict(self)


@dataclass(frozen=True)
class NetworkScore:
    """Network-side (no reference) G.107 and Cole & Rosenbluth scores of one direction.

    Attributes
    ----------
    codec : str
        The G.113 preset used for Ie/Bpl (Appendix I; Appendix IV for a wide-band one).
    band : {"nb", "wb"}
        Which E-model scored the stream: G.107 (R on 0..100) for narrow-band codecs,
        G.107.1 (R_WB on 0..129, MOS from R_WB/1.29) for wide-band ones.
    ppl : float
        Effective packet loss (network + late) in percent.
    burst_r : float
        G.107 BurstR of the effective loss pattern (eq. 7-32).
    delay_ms : float
        Mean delay used for Id (``DelayTerms.ta_ms`` over the whole stream).
    id_, ie_eff : float
        G.107 delay impairment and effective equipment impairment (eq. 7-31).
    r, mos : float
        G.107 R and MOS (Annex B) of the whole stream.
    mos_simplified : float
        Cole & Rosenbluth (2001) MOS (NaN for codecs they did not fit).
    mos_min, mos_mean : float
        Worst and mean G.107 MOS over the windows.
    windows : WindowScores
        The per-window figures.
    """

    codec: str
    band: str
    ppl: float
    burst_r: float
    delay_ms: float
    id_: float
    ie_eff: float
    r: float
    mos: float
    mos_simplified: float
    mos_min: float
    mos_mean: float
    windows: WindowScores = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """Whole-stream figures plus ``windows`` (per-window lists)."""
        return as_dict(self)

    def window_records(self) -> list[dict[str, Any]]:
        """One flat record per window."""
        w = self.windows
        return [
            {
                "window_start_s": float(w.start_s[i]),
                "window_s": w.window_s,
                "packets": int(w.packets[i]),
                "lost": int(w.lost[i]),
                "ppl": float(w.ppl[i]),
                "burst_r": float(w.burst_r[i]),
                "delay_ms": float(w.delay_ms[i]),
                "r": float(w.r[i]),
                "mos": float(w.mos[i]),
                "mos_simplified": float(w.mos_simplified[i]),
            }
            for i in range(w.start_s.shape[0])
        ]


@dataclass(frozen=True, slots=True)
class PlayScore:
    """The seed paper's score of one located play of a reference.

    Attributes
    ----------
    reference : str
        Name of the reference.
    start_s : float
        Where the reference's first sample falls in the received audio (s from its
        first sample; negative when the play began before the capture).
    coverage : float
        Fraction of the reference the received audio holds (1.0: the whole play).
    correlation : float
        Envelope correlation that located it.
    mos_lqo : float
        P.862 + P.862.1 MOS-LQO of the play.
    pesq_raw : float
        Raw P.862 score.
    ta_ms : float
        Mean delay (``DelayTerms.ta_ms``) of the packets of this play.
    z1, z2, z, mos : float
        R of ``mos_lqo``; Id of ``ta_ms``; max(0, z1 − z2); MOS of z.
    """

    reference: str
    start_s: float
    coverage: float
    correlation: float
    mos_lqo: float
    pesq_raw: float
    ta_ms: float
    z1: float
    z2: float
    z: float
    mos: float

    def to_dict(self) -> dict[str, Any]:
        """Fields as plain Python values."""
        return as_dict(self)


@dataclass(frozen=True)
class FullReferenceScore:
    """Full-reference score of one direction: the seed paper §7.1 over its located plays.

    The direction's figures are those of the mean MOS-LQO and mean delay of its plays.

    Attributes
    ----------
    plays : tuple of PlayScore
    mos_lqo, ta_ms, z1, z2, z, mos : float
    band : {"nb", "wb"}
        ``"nb"``: P.862 MOS-LQO and G.107 (z on 0..100). ``"wb"``: the codec is wide-band:
        P.862.2 MOS-LQO at 16 kHz and the G.107.1 scale (z on 0..129, MOS from z / 1.29).
    """

    plays: tuple[PlayScore, ...]
    mos_lqo: float
    ta_ms: float
    z1: float
    z2: float
    z: float
    mos: float
    band: str = "nb"

    def to_dict(self) -> dict[str, Any]:
        """Summary figures plus ``plays`` (one dict per play)."""
        out = as_dict(self, skip=("plays",))
        out["plays"] = [p.to_dict() for p in self.plays]
        return out


@dataclass(frozen=True)
class DirectionScore:
    """Every score of one direction (one RTP stream) of a call, and the facts behind them.

    Attributes
    ----------
    call_id : str
        The call (SIP Call-ID or address pair).
    direction : {"user talks", "user listens"} or None
        None when it is not known which end is the user (:func:`qoe.voice.call.score_call`).
    stream : str
        ``"src:port -> dst:port"`` and SSRC.
    ssrc : int
    codec : str or None
        Encoding name (``PCMA``, ``PCMU``, ...).
    payload_type, clock_rate : int
    capture : str or None
        The capture this stream was scored from (its receiver side when two were given).
    jitter_buffer : str
        The simulated buffer (``"adaptive"``, ``"fixed:60"``, ``"none"``).
    conceal : str
        Loss concealment of the rebuilt audio (``"repeat"`` or ``"silence"``).
    expected, received, network_lost, late_lost, duplicates : int
        Packets, by the receiver-side sequence numbers (network loss) and the jitter
        buffer (late loss).
    effective_loss : float
        (network + late loss) / expected.
    burst_r : float
        G.107 BurstR of the effective loss pattern.
    loss_bursts, max_burst : int
        Runs of effective loss and the longest.
    jitter_ms : float
        Mean RFC 3550 interarrival jitter (as tshark prints it).
    delay : DelayTerms
    network : NetworkScore or None
        None when the codec has no G.113 preset (see ``notes``).
    full_reference : FullReferenceScore or None
        None without a reference, for codecs qoe cannot decode, or when no play of a
        reference was found in this stream.
    inputs : dict of str to str
        For each input of the scores, whether it was measured, given or assumed, and how.
    notes : tuple of str
        Everything worth knowing to read the scores (assumptions, skipped parts).
    """

    call_id: str
    direction: Direction | None
    stream: str
    ssrc: int
    codec: str | None
    payload_type: int
    clock_rate: int
    capture: str | None
    jitter_buffer: str
    conceal: str
    expected: int
    received: int
    network_lost: int
    late_lost: int
    duplicates: int
    effective_loss: float
    burst_r: float
    loss_bursts: int
    max_burst: int
    jitter_ms: float
    delay: DelayTerms
    network: NetworkScore | None
    full_reference: FullReferenceScore | None
    inputs: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    #: What this result scores (the ``kind`` column of :meth:`qoe.Report.to_records`).
    kind: ClassVar[str] = "voice"
    #: The columns of ``to_record(brief=True)``: the headline figures, under the full record's names.
    BRIEF_COLUMNS: ClassVar[tuple[str, ...]] = (
        "call_id", "direction", "stream", "codec", "expected", "network_lost", "late_lost", "burst_r",
        "mouth_to_ear_ms", "ta_ms", "id", "r", "mos_network", "mos_network_min", "mos_cole_rosenbluth", "mos_lqo",
        "z1", "z2", "z", "mos",
    )

    @property
    def mos(self) -> float:
        """The headline MOS: full-reference when available, else the network-side G.107 MOS."""
        if self.full_reference is not None:
            return self.full_reference.mos
        return self.network.mos if self.network is not None else float("nan")

    @property
    def label(self) -> str:
        """How notes name this result: its direction, or its stream when the user's end is unknown."""
        return self.direction or self.stream

    def identity(self) -> dict[str, Any]:
        """The columns that name this direction in detail tables."""
        return {"call_id": self.call_id, "direction": self.direction, "stream": self.stream,
                "ssrc": _ssrc(self.ssrc)}

    def to_record(self, *, brief: bool = False) -> dict[str, Any]:
        """One flat record (for tables, CSV and DataFrames); per-window and per-play lists left out.

        Parameters
        ----------
        brief : bool, keyword-only
            Only the headline columns (:attr:`BRIEF_COLUMNS`, what fits a terminal):
            direction, stream, loss, delays, the network-side and the full-reference
            scores, under the same names as in the full record.
        """
        full = self._record()
        return _brief(full, self.BRIEF_COLUMNS) if brief else full

    def _record(self) -> dict[str, Any]:
        d = self.delay
        n = self.network
        fr = self.full_reference
        nan = float("nan")
        return {
            **self.identity(),
            "codec": self.codec,
            "capture": self.capture,
            "jitter_buffer": self.jitter_buffer,
            "expected": self.expected,
            "received": self.received,
            "network_lost": self.network_lost,
            "late_lost": self.late_lost,
            "effective_loss": self.effective_loss,
            "burst_r": self.burst_r,
            "jitter_ms": self.jitter_ms,
            "packetisation_ms": d.packetisation_ms,
            "network_ms": d.network_ms,
            "network_source": d.network_source,
            "buffer_ms": d.buffer_ms,
            "mouth_to_ear_ms": d.mouth_to_ear_ms,
            "ta_ms": d.ta_ms,
            "id": d.id_,
            "emodel_codec": n.codec if n else None,
            "emodel_band": n.band if n else None,
            "ie_eff": n.ie_eff if n else nan,
            "r": n.r if n else nan,
            "mos_network": n.mos if n else nan,
            "mos_network_min": n.mos_min if n else nan,
            "mos_network_mean": n.mos_mean if n else nan,
            "mos_cole_rosenbluth": n.mos_simplified if n else nan,
            "plays": len(fr.plays) if fr else 0,
            "mos_lqo": fr.mos_lqo if fr else nan,
            "z1": fr.z1 if fr else nan,
            "z2": fr.z2 if fr else nan,
            "z": fr.z if fr else nan,
            "mos_call": fr.mos if fr else nan,
            "mos": self.mos,
            "notes": "; ".join(self.notes),
        }

    def to_dict(self) -> dict[str, Any]:
        """Nested plain-Python view: everything, including windows, plays and inputs."""
        nested = ("delay", "network", "full_reference", "inputs", "notes")
        out = as_dict(self, skip=("ssrc", *nested))
        out["ssrc"] = _ssrc(self.ssrc)
        out["mos"] = self.mos
        out.update((name, to_plain(getattr(self, name))) for name in nested)
        return out

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """Detail tables: ``windows`` (per time window) and ``plays`` (per located play)."""
        return {
            "windows": self.network.window_records() if self.network else [],
            "plays": [p.to_dict() for p in self.full_reference.plays] if self.full_reference else [],
        }


@dataclass(frozen=True)
class CallScore:
    """The scores of one call: one :class:`DirectionScore` per stream.

    Attributes
    ----------
    call_id : str
    user : str or None
        The address taken as the user's end (None when unknown).
    directions : tuple of DirectionScore
    notes : tuple of str
        Notes about the call as a whole (e.g. how the user's end was chosen).
    """

    call_id: str
    user: str | None
    directions: tuple[DirectionScore, ...]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Nested plain-Python view."""
        return as_dict(self)
