"""Codec presets of the E-model: Ie and Bpl after ITU-T G.113, with the source of each value.

Data only: :data:`CODECS` (narrow-band, G.113 (11/2007) Appendix I) and :data:`CODECS_WB`
(wide-band, G.113 Appendix IV), each an immutable mapping of lower-case preset name to
:class:`Codec`, and :func:`codec` to look one up. :mod:`qoe.voice.emodel` applies them
(``r_factor(codec=...)``) and re-exports every name here.

References
----------
.. [1] ITU-T G.113 (11/2007), "Transmission impairments due to speech processing",
   Appendix I, Table I.1 (Ie values) and Table I.3 (Bpl values); (09/2024) Appendix IV,
   Tables IV.1, IV.3, IV.4 (wide-band Ie,WB, Bpl,WB). Not read; each preset's ``source``
   says what it was checked against.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from qoe.errors import InputError

__all__ = ["Codec", "CODECS", "CODECS_WB", "UNVERIFIED", "codec"]

#: What a preset's ``source`` says when nothing was checked: G.113's text could not be read
#: (issue 11, point 9), and no other public source quoting the value was found.
UNVERIFIED = "unverified: G.113 (11/2007) Appendix I could not be read and no other source was checked"

# Secondary sources that quote G.113 Ie values, read through the project's search tool
# (their text, not G.113's). Neither is the Recommendation: a preset they agree with is
# "checked against" them, not verified against G.113.
_MITEL = ("Mitel MiVoice MX-ONE 7.8 SP1 planning library, 'Speech Compression Impairment', "
          "Table 1 (G.726 32 kbit/s: 7; G.729A(AB): 11; G.723.1 6.3 kbit/s: 15; its note: "
          "G.729: 10)")
_NORTEL = ("Nortel CS 1000 'IP Trunk Fundamentals' NN43001-563 01.01 (2007), Table 29 (G.711: "
           "0; G.729A/AB 20-30 ms frames: 11; G.723.1 5.3 kbit/s: 19, 6.3 kbit/s: 15), which "
           "says its factors are 'not identical to those shown in the ITU-T standards'")


@dataclass(frozen=True, slots=True)
class Codec:
    """Equipment impairment of a codec: Ie, and Bpl where one is tabulated.

    Attributes
    ----------
    name : str
        Preset name as accepted by ``r_factor(codec=...)``.
    ie : float
        Equipment impairment factor Ie (after G.113 Appendix I, Table I.1), or Ie,WB for a
        wide-band preset (:data:`CODECS_WB`, G.113 Appendix IV).
    bpl : float or None
        Packet-loss robustness factor Bpl (after G.113 Appendix I, Table I.3, or Appendix IV
        for Bpl,WB); ``None`` when none is tabulated, in which case a loss probability needs
        an explicit ``bpl``.
    description : str
        Codec, bit rate and (for Bpl) the packet size and concealment it was measured with.
    source : str
        Which source the values were checked against, value by value; :data:`UNVERIFIED`
        (the default) when none was. G.113 itself could not be read (issue 11, point 9).
    """

    name: str
    ie: float
    bpl: float | None
    description: str
    source: str = UNVERIFIED


def _codec_table(entries: list[Codec]) -> Mapping[str, Codec]:
    return MappingProxyType({c.name.lower(): c for c in entries})


def _checked(ie_by: str, bpl: bool) -> str:
    tail = "; Bpl unverified (no source quoting G.113 Table I.3 was found)" if bpl else ""
    return f"Ie checked against {ie_by} (G.113 itself not read){tail}"


#: Narrow-band codec presets after ITU-T G.113 (11/2007) Appendix I: Ie from Table I.1,
#: Bpl from Table I.3 (random packet loss). The values were transcribed when this table
#: was written; G.113's text could not be read to re-check them (issue 11, point 9). Each
#: preset's ``source`` says what its values were checked against: the Ie of G.711, G.726
#: 32 kbit/s, G.729, G.729A and G.723.1 agree with two secondary sources quoting G.113
#: (a Mitel and a Nortel planning guide); every other Ie and every Bpl is
#: :data:`UNVERIFIED`. Pass ``ie=``/``bpl=`` explicitly where the exact value matters.
CODECS: Mapping[str, Codec] = _codec_table(
    [
        Codec("G.711", 0.0, 4.3, "G.711 PCM 64 kbit/s, 10 ms packets, no PLC (Table I.1/I.3)",
              _checked(_NORTEL, bpl=True)),
        Codec("G.711-plc", 0.0, 25.1, "G.711 PCM 64 kbit/s, 10 ms packets, G.711 Appendix I PLC (Table I.1/I.3)",
              _checked(_NORTEL, bpl=True)),
        Codec("G.726-40", 2.0, None, "G.726 ADPCM 40 kbit/s (Table I.1)"),
        Codec("G.726-32", 7.0, None, "G.726 ADPCM 32 kbit/s (Table I.1)", _checked(_MITEL, bpl=False)),
        Codec("G.726-24", 25.0, None, "G.726 ADPCM 24 kbit/s (Table I.1)"),
        Codec("G.726-16", 50.0, None, "G.726 ADPCM 16 kbit/s (Table I.1)"),
        Codec("G.728-16", 7.0, None, "G.728 LD-CELP 16 kbit/s (Table I.1)"),
        Codec("G.728-12.8", 20.0, None, "G.728 LD-CELP 12.8 kbit/s (Table I.1)"),
        Codec("G.729", 10.0, None, "G.729 CS-ACELP 8 kbit/s (Table I.1)", _checked(_MITEL, bpl=False)),
        Codec("G.729A+VAD", 11.0, 19.0, "G.729A CS-ACELP 8 kbit/s with VAD, 20 ms packets (Table I.1/I.3)",
              _checked(f"{_MITEL} and {_NORTEL}", bpl=True)),
        Codec("G.723.1-6.3", 15.0, None, "G.723.1 MP-MLQ 6.3 kbit/s (Table I.1)",
              _checked(f"{_MITEL} and {_NORTEL}", bpl=False)),
        Codec("G.723.1-5.3", 19.0, None, "G.723.1 ACELP 5.3 kbit/s (Table I.1)", _checked(_NORTEL, bpl=False)),
        Codec("G.723.1+VAD", 15.0, 16.1, "G.723.1 MP-MLQ 6.3 kbit/s with VAD, 30 ms packets (Table I.1/I.3)",
              _checked(f"{_MITEL} and {_NORTEL}", bpl=True)),
        Codec("GSM-FR", 20.0, None, "GSM 06.10 RPE-LTP full rate 13 kbit/s (Table I.1)"),
        Codec("GSM-HR", 23.0, None, "GSM 06.20 VSELP half rate 5.6 kbit/s (Table I.1)"),
        Codec("GSM-EFR", 5.0, 10.0, "GSM 06.60 ACELP enhanced full rate 12.2 kbit/s, 20 ms packets (Table I.1/I.3)"),
        Codec("IS-54", 20.0, None, "IS-54 VSELP 8 kbit/s (Table I.1)"),
        Codec("IS-641", 10.0, None, "IS-641 ACELP 7.4 kbit/s (Table I.1)"),
        Codec("IS-96a", 21.0, None, "IS-96a QCELP 8 kbit/s (Table I.1)"),
        Codec("IS-127", 6.0, None, "IS-127 RCELP (EVRC) 8 kbit/s (Table I.1)"),
        Codec("PDC-FR", 24.0, None, "Japanese PDC VSELP full rate 6.7 kbit/s (Table I.1)"),
    ]
)

# Secondary sources of G.113 Appendix IV (wide-band Ie,WB / Bpl,WB), read through the
# project's search tool. G.113 itself could not be read (its 11/2007, 2009 amendment and
# later editions are not in the search corpora), so every wide-band preset is "checked
# against" one of these, never verified against the Recommendation.
_SIPNAB = ("NormB/sipnab src/rtp/emodel_wb.rs (MIT/Apache-2.0, commit 3141f383), which "
           "transcribes G.113 (09/2024) Appendix IV: Table IV.1 (Ie,WB, monotic listening, all "
           "nine AMR-WB modes), Table IV.3 (Ie,WB, diotic, six modes), Table IV.4 (Bpl,WB, "
           "diotic, uniform loss, three modes)")
_MITEL_WB = ("Mitel MiVoice MX-ONE 7.8 SP1 planning library, 'Speech Compression Impairment', "
             "Table 2 'G.722 codec' (Ie,wb = 14 / 18 / 24 at 64 / 56 / 48 kbit/s); it does not "
             "name G.113 or its table")


def _wb(name: str, ie: float, bpl: float | None, description: str, source: str) -> Codec:
    return Codec(name, ie, bpl, description, source)


_AMRWB_MONOTIC = {  # kbit/s -> Ie,WB, G.113 (09/2024) Table IV.1 as transcribed by _SIPNAB
    "6.6": 41.0, "8.85": 26.0, "12.65": 13.0, "14.25": 10.0, "15.85": 7.0,
    "18.25": 5.0, "19.85": 3.0, "23.05": 1.0, "23.85": 8.0,
}
_AMRWB_DIOTIC = {  # kbit/s -> (Ie,WB Table IV.3, Bpl,WB Table IV.4 or None), as transcribed by _SIPNAB
    "6.6": (56.0, None), "8.85": (41.0, None), "12.65": (20.0, 4.3),
    "15.85": (17.0, None), "23.05": (8.0, 4.6), "23.85": (10.0, 4.9),
}

#: Wide-band codec presets (``r_factor(band="wb", codec=...)``), on the 0..129 scale of
#: G.107.1. G.107.1 has no codec table of its own: it defers to G.113 Appendix IV
#: ("provisional planning values"). G.113's text could not be read here, so each preset's
#: ``source`` names the secondary source its values were checked against:
#:
#: * ``G.722.2-<kbit/s>`` (AMR-WB, all nine modes): Ie,WB of G.113 (09/2024) Table IV.1
#:   (monotic listening: handset or one-ear headset), no Bpl (IV.4 has none for monotic
#:   listening, and a diotic Bpl is not paired with a monotic Ie).
#: * ``G.722.2-<kbit/s>-diotic`` (six modes): Ie,WB of Table IV.3 (diotic: two-ear headset
#:   or loudspeaker), with the Bpl,WB of Table IV.4 where it has one (23.85, 23.05, 12.65).
#: * ``G.722-64/56/48``: Ie,WB 14 / 18 / 24 as quoted by a Mitel planning guide (which does
#:   not name its source); no Bpl.
#: * ``G.711-wb``: G.711 heard in a wide-band context, Ie,WB = 30 as issue 11 quotes G.113
#:   Appendix IV; :data:`UNVERIFIED` (no source quoting it was found).
#:
#: A preset without Bpl scores a loss-free stream only; give ``bpl=`` to model loss. No
#: preset exists for wide-band Opus, Speex or L16: G.113 tabulates none (give ``ie``/``bpl``).
CODECS_WB: Mapping[str, Codec] = _codec_table(
    [
        _wb("G.722-64", 14.0, None, "G.722 SB-ADPCM 64 kbit/s (mode 1), wide-band scale", f"Ie,WB checked against {_MITEL_WB}; Bpl: none found"),
        _wb("G.722-56", 18.0, None, "G.722 SB-ADPCM 56 kbit/s (mode 2), wide-band scale", f"Ie,WB checked against {_MITEL_WB}; Bpl: none found"),
        _wb("G.722-48", 24.0, None, "G.722 SB-ADPCM 48 kbit/s (mode 3), wide-band scale", f"Ie,WB checked against {_MITEL_WB}; Bpl: none found"),
        _wb("G.711-wb", 30.0, None, "G.711 PCM 64 kbit/s heard in a wide-band context (G.113 Appendix IV, per issue 11)", UNVERIFIED),
        *[_wb(f"G.722.2-{k}", ie, None, f"G.722.2 (AMR-WB) {k} kbit/s, monotic listening (G.113 Table IV.1)",
              f"Ie,WB checked against {_SIPNAB} (Table IV.1); G.113 itself not read; no monotic Bpl,WB exists there")
          for k, ie in _AMRWB_MONOTIC.items()],
        *[_wb(f"G.722.2-{k}-diotic", ie, bpl, f"G.722.2 (AMR-WB) {k} kbit/s, diotic listening (G.113 Tables IV.3/IV.4)",
              f"Ie,WB (Table IV.3){' and Bpl,WB (Table IV.4)' if bpl is not None else ''} checked against {_SIPNAB}; "
              "G.113 itself not read")
          for k, (ie, bpl) in _AMRWB_DIOTIC.items()],
    ]
)


def codec(name: str, *, band: Literal["nb", "wb"] = "nb") -> Codec:
    """Look up a codec preset by name (case-insensitive).

    Raises
    ------
    InputError
        For an unknown name; the message lists the known ones.
    """
    table = CODECS if band == "nb" else CODECS_WB
    if not isinstance(name, str):
        raise InputError(f"codec must be a codec's name (str), e.g. 'G.711-plc'; given {type(name).__name__}")
    try:
        return table[name.lower()]
    except KeyError:
        known = ", ".join(c.name for c in table.values()) or "none"
        raise InputError(f"unknown {band} codec {name!r}; known codecs: {known}") from None
