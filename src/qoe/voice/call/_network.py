"""The network-side (no-reference) score of one direction: G.107 (G.107.1 for wide-band codecs) per window.

See :mod:`qoe.voice.call` ("Network side") and :mod:`qoe.voice.netscore`.

References
----------
.. [1] ITU-T G.107 (06/2015), clause 7 (R from Ppl, BurstR, Ie, Bpl and the delays).
.. [2] ITU-T G.113 (11/2007), Appendix I, Tables I.1 and I.3 (Ie, Bpl of G.711 with and
   without packet-loss concealment, G.729A+VAD).
.. [3] RFC 3551, §4.5 (Table 4: audio encodings).
.. [4] ITU-T G.107.1 (06/2019) (the wide-band E-model) and G.113 Appendix IV (wide-band
   Ie,WB / Bpl,WB; see :data:`qoe.voice.emodel.CODECS_WB` for what was read of it).
.. [5] RFC 4867 §8.1 (AMR-WB ``mode-set``: mode n of 6.6, 8.85, 12.65, 14.25, 15.85, 18.25,
   19.85, 23.05, 23.85 kbit/s).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from qoe.errors import UnsupportedCodecError
from qoe.voice import emodel, g711
from qoe.voice.call._delay import Prep
from qoe.voice.decode import stream_band
from qoe.voice.call._results import NetworkScore
from qoe.voice.netscore import windowed_scores

if TYPE_CHECKING:  # pragma: no cover
    from qoe.rtp import RtpStream

__all__ = ["emodel_preset", "network_score"]

# The G.113 (11/2007) Appendix I preset (Table I.1 Ie, Table I.3 Bpl; names of
# qoe.voice.emodel.CODECS) of each encoding name (RFC 3551 §4.5, SDP a=rtpmap) that has one.
# G.729 streams are taken as G.729A with VAD (the only G.729 entry with a Bpl); G.723.1 as
# 6.3 kbit/s with VAD (likewise); AMR's 12.2 kbit/s mode is GSM-EFR (3GPP TS 26.071 §4) but
# other modes are not, so AMR has none.
_EMODEL_PRESET = {
    "G729": "G.729A+VAD",
    "G729A": "G.729A+VAD",
    "G723": "G.723.1+VAD",
    "GSM": "GSM-FR",
    **{f"{p}G726-{r}": f"G.726-{r}" for p in ("", "AAL2-") for r in (16, 24, 32, 40)},
}


# RFC 4867 §8.1 / 3GPP TS 26.201: AMR-WB mode numbers and their bit rates (kbit/s).
_AMRWB_MODES = ("6.6", "8.85", "12.65", "14.25", "15.85", "18.25", "19.85", "23.05", "23.85")


def _wideband_preset(stream: RtpStream) -> tuple[str | None, str]:
    """The G.113 Appendix IV preset of a wide-band stream (None: none fits) and why."""
    name = (stream.codec or "").upper()
    if name == "G722":
        # RFC 3551 §4.5.2: G.722 on RTP is the 64 kbit/s mode.
        return "G.722-64", "codec Ie,WB: G.113 Appendix IV preset 'G.722-64' (G.107.1, wide-band)"
    if name == "AMR-WB":
        modes = str((getattr(stream, "fmtp", None) or {}).get("mode-set", "")).split(",")
        modes = [m.strip() for m in modes if m.strip()]
        if len(modes) == 1 and modes[0].isdigit() and int(modes[0]) < len(_AMRWB_MODES):
            preset = f"G.722.2-{_AMRWB_MODES[int(modes[0])]}"
            return preset, f"codec Ie,WB: G.113 Appendix IV preset {preset!r} (SDP mode-set={modes[0]}; G.107.1)"
        return None, ("network-side score skipped: AMR-WB's Ie,WB depends on its mode (G.113 Table IV.1), and the "
                      "SDP names no single mode-set; give the codec option a G.722.2-<kbit/s> preset")
    return None, (f"network-side score skipped: no G.113 Appendix IV (wide-band) preset for payload type "
                  f"{stream.payload_type} ({stream.codec}); give the codec option a preset of "
                  "qoe.voice.emodel.CODECS_WB (or CODECS, for a narrow-band score)")


def emodel_preset(stream: RtpStream, conceal: str, codec: str | None) -> tuple[str | None, str, str]:
    """The G.113 preset for ``stream`` (None: none fits), its band, and a note saying why.

    The preset follows the stream's codec and its audio bandwidth
    (:func:`qoe.voice.decode.stream_band`; Opus by its packets' TOC bytes): narrow-band
    codecs get a G.113 Appendix I preset and are scored with G.107; wide-band codecs (G.722,
    AMR-WB, wide-band Opus, Speex and L16 at 16 kHz or more) get a G.113 Appendix IV preset
    and are scored with G.107.1. G.722
    is its 64 kbit/s preset; AMR-WB needs a single SDP ``mode-set``; Opus, Speex and L16
    have no G.113 preset, so their network-side score is skipped unless ``codec`` names one.
    A given ``codec`` is looked up among the narrow-band presets first, then the wide-band;
    a narrow-band preset given for a wide-band stream scores it on G.107's narrow-band scale,
    and the note says so.
    """
    wide = stream_band(stream) == "wb"
    if codec is not None:
        if codec.lower() in emodel.CODECS_WB and codec.lower() not in emodel.CODECS:
            return codec, "wb", f"codec Ie/Bpl: wide-band preset {codec!r} (given; G.107.1)"
        emodel.codec(codec)  # validates, listing the known presets
        note = f"codec Ie/Bpl: preset {codec!r} (given)"
        if wide:
            note += f"; {stream.codec} is wide-band: this network-side score is on G.107's narrow-band scale only"
        return codec, "nb", note
    try:
        g711.g711_codec(stream.payload_type, stream.codec)
    except UnsupportedCodecError:
        if wide:
            preset, note = _wideband_preset(stream)
            return preset, "wb", note
        name = (stream.codec or "").upper()
        if name in _EMODEL_PRESET:
            preset = _EMODEL_PRESET[name]
            return preset, "nb", f"codec Ie/Bpl: G.113 preset {preset!r} assumed for {stream.codec}"
        return None, "nb", (
            f"network-side score skipped: no G.113 Appendix I preset for payload type {stream.payload_type} "
            f"({stream.codec or 'unknown codec'}); give the codec option a G.113 preset"
        )
    if conceal == "repeat":
        return "G.711-plc", "nb", "codec Ie/Bpl: G.113 'G.711-plc' (concealment on)"
    return "G.711", "nb", "codec Ie/Bpl: G.113 'G.711' (no concealment)"


def network_score(prep: Prep, preset: str, *, window_s: float, emodel_params: Mapping[str, Any],
                  band: str = "nb") -> NetworkScore:
    """G.107 (G.107.1 for ``band="wb"``) over the effective loss (network + late) and the delay
    ``prep.ta_ms``, per window and overall."""
    pl = prep.playout
    p = prep.stream.packets
    lost = pl.lost | pl.slot_late
    delay = np.full(lost.shape[0], np.nan)
    played = pl.played
    delay[p.seq_ext[played] - pl.seq_first] = prep.ta_ms[played]
    send_s = np.arange(lost.shape[0]) * (prep.ptime_ms / 1000.0 if prep.ptime_ms > 0 else 0.02)
    ws = windowed_scores(send_s, lost, delay, codec=preset, band=band, window_s=window_s,  # type: ignore[arg-type]
                         out_of_range="ignore", **emodel_params)
    o = ws.overall
    d = 0.0 if math.isnan(o["delay_ms"]) else o["delay_ms"]
    if band == "wb":  # G.107.1 7.5: no BurstR in Ie,eff,WB
        full = emodel.r_factor(codec=preset, band="wb", ppl=o["ppl"], mouth_to_ear_ms=d, out_of_range="ignore",
                               **emodel_params)
    else:
        full = emodel.r_factor(codec=preset, ppl=o["ppl"], burst_r=o["burst_r"], mouth_to_ear_ms=d, out_of_range="ignore",
                               **emodel_params)
    return NetworkScore(
        codec=ws.codec,
        band=band,
        ppl=float(o["ppl"]),
        burst_r=float(o["burst_r"]),
        delay_ms=float(o["delay_ms"]),
        id_=float(full.id_),
        ie_eff=float(full.ie_eff),
        r=float(o["r"]),
        mos=float(o["mos"]),
        mos_simplified=float(o["mos_simplified"]),
        mos_min=float(o["mos_min"]),
        mos_mean=float(o["mos_mean"]),
        windows=ws,
    )
