"""The network-side (no-reference) score of one direction: G.107 and Cole & Rosenbluth per window.

See :mod:`qoe.voice.call` ("Network side") and :mod:`qoe.voice.netscore`.

References
----------
.. [1] ITU-T G.107 (06/2015), clause 7 (R from Ppl, BurstR, Ie, Bpl and the delays).
.. [2] ITU-T G.113 (11/2007), Appendix I, Tables I.1 and I.3 (Ie, Bpl of G.711 with and
   without packet-loss concealment, G.729A+VAD).
.. [3] RFC 3551, §4.5 (Table 4: audio encodings).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from qoe.errors import UnsupportedCodecError
from qoe.voice import emodel, g711
from qoe.voice.call._delay import Prep
from qoe.voice.call._results import NetworkScore
from qoe.voice.decode import stream_band
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


def emodel_preset(stream: RtpStream, conceal: str, codec: str | None) -> tuple[str | None, str]:
    """The G.113 Appendix I preset for ``stream`` (None: none fits) and a note saying why.

    The preset follows the stream's codec. Wide-band codecs (G.722, AMR-WB, wide-band Opus,
    Speex and L16 at 16 kHz or more; :func:`qoe.voice.decode.stream_band`) get none: G.107.1
    needs Ie,WB and Bpl,WB (G.113 Appendix IV), which qoe does not ship (see
    :data:`qoe.voice.emodel.CODECS_WB`), and the note says so. A preset given for a wide-band
    stream is a G.113 narrow-band one: the note says the score is on G.107's narrow-band scale.
    """
    wide = stream_band(stream) == "wb"
    name = stream.codec or "unknown codec"
    if codec is not None:
        emodel.codec(codec)  # validates, listing the known presets
        note = f"codec Ie/Bpl: preset {codec!r} (given)"
        if wide:
            note += f"; {name} is wide-band: this network-side score is on G.107's narrow-band scale only"
        return codec, note
    if wide:
        return None, (
            f"network-side score skipped: {name} is wide-band and qoe has no G.107.1 wide-band codec preset "
            "(Ie,WB, Bpl,WB) for it; a G.113 preset given as the codec option scores it on G.107's narrow-band scale"
        )
    try:
        g711.g711_codec(stream.payload_type, stream.codec)
    except UnsupportedCodecError:
        name = (stream.codec or "").upper()
        if name in _EMODEL_PRESET:
            preset = _EMODEL_PRESET[name]
            return preset, f"codec Ie/Bpl: G.113 preset {preset!r} assumed for {stream.codec}"
        return None, (
            f"network-side score skipped: no G.113 Appendix I preset for payload type {stream.payload_type} "
            f"({stream.codec or 'unknown codec'}); give the codec option a G.113 preset"
        )
    if conceal == "repeat":
        return "G.711-plc", "codec Ie/Bpl: G.113 'G.711-plc' (concealment on)"
    return "G.711", "codec Ie/Bpl: G.113 'G.711' (no concealment)"


def network_score(prep: Prep, preset: str, *, window_s: float, emodel_params: Mapping[str, Any]) -> NetworkScore:
    """G.107 over the effective loss (network + late) and the delay ``prep.ta_ms``, per window and overall."""
    pl = prep.playout
    p = prep.stream.packets
    lost = pl.lost | pl.slot_late
    delay = np.full(lost.shape[0], np.nan)
    played = pl.played
    delay[p.seq_ext[played] - pl.seq_first] = prep.ta_ms[played]
    send_s = np.arange(lost.shape[0]) * (prep.ptime_ms / 1000.0 if prep.ptime_ms > 0 else 0.02)
    ws = windowed_scores(send_s, lost, delay, codec=preset, window_s=window_s, **emodel_params)
    o = ws.overall
    d = 0.0 if math.isnan(o["delay_ms"]) else o["delay_ms"]
    full = emodel.r_factor(codec=preset, ppl=o["ppl"], burst_r=o["burst_r"], one_way_ms=d, **emodel_params)
    return NetworkScore(
        codec=ws.codec,
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
