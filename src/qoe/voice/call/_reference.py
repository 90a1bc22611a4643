"""The full-reference score of one direction: locate each reference in the received audio, score each play.

Two steps, at the seam the scorer marks: :func:`locate_plays` finds where each reference
was played in the audio the receiver rebuilt; :func:`score_plays` cuts each play out and
scores it with P.862 and the seed paper's z1, z2, z (§7.1). :func:`full_reference` runs
both on one direction.

References
----------
.. [1] Pujol, Hohlfeld, Ciucu, Feldmann, Barford, "A QoE Perspective on Sizing Network
   Buffers", ACM IMC 2014, §7.1 (z1, z2, z).
.. [2] ITU-T P.862 (02/2001), clause 10.1.3 (utterance search range), and P.862.1
   (11/2003) (MOS-LQO).
.. [3] ITU-T P.862.3 (11/2007), clause 7.1.1 (8-12 s speech samples).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import gcd
from typing import TYPE_CHECKING, Any

import numpy as np

from qoe.errors import InputError, QoEError, UnsupportedCodecError
from qoe.voice.call._delay import Prep
from qoe.voice.call._inputs import Reference
from qoe.voice.call._results import FullReferenceScore, PlayScore
from qoe.voice.combined import combined_score
from qoe.voice.decode import decode_stream, pesq_audio
from qoe.voice.timeline import ReceivedAudio

if TYPE_CHECKING:  # pragma: no cover
    from qoe.voice.locate import Play

__all__ = ["full_reference", "locate_plays", "score_plays"]

# P.862 (02/2001) clause 10.1.3: the utterance search looks a few hundred ms either side;
# each play is cut with this much of the received signal around it (but never into the
# next play), so that a play delayed by the jitter buffer is still inside the cut.
_PLAY_MARGIN_S = 0.25
# A play must cover at least 2 s of the reference to be scored: P.862.3 (11/2007)
# clause 7.1.1 asks for 8-12 s samples, and PESQ on less than a couple of utterances
# is not meaningful. (Our threshold.)
_MIN_PLAY_S = 2.0


def _z_terms(mos_lqo: float, ta_ms: float, emodel_params: Mapping[str, Any], band: str = "nb") -> dict[str, float]:
    """The seed paper's z1, z2, z and MOS (§7.1) of a MOS-LQO heard at a delay ``ta_ms``.

    A wide-band direction is scored on G.107.1's scale (``band="wb"``, see
    :func:`qoe.voice.combined.combined_score`).
    """
    cs = combined_score(mos_lqo, ta_ms, band=band, out_of_range="ignore", **emodel_params)  # a note says it
    return {"z1": float(cs.z1), "z2": float(cs.z2), "z": float(cs.z), "mos": float(cs.mos)}


def _f(x: Any) -> float:
    return float(x) if x is not None else float("nan")


def locate_plays(
    audio: ReceivedAudio, references: Sequence[Reference], *, stream: str, min_correlation: float
) -> tuple[list[tuple[Reference, Play]], list[str]]:
    """Every play of every reference in ``audio`` long enough to score, in time order, and notes.

    Raises
    ------
    InputError
        A reference at another sample rate than the stream's.
    """
    from qoe.voice.locate import locate_reference  # noqa: PLC0415 - SciPy, only when references are given

    fs = audio.sample_rate
    found: list[tuple[Reference, Play]] = []
    notes: list[str] = []
    for ref in references:
        if int(ref.fs) != fs:
            raise InputError(
                f"reference {ref.name!r} is sampled at {ref.fs} Hz but stream {stream} plays at {fs} Hz; "
                f"resample it first (e.g. qoe.voice.load_speech(path, fs={fs}))"
            )
        for play in locate_reference(audio.samples, ref.samples, fs=fs, min_correlation=min_correlation):
            if play.ref_end - play.ref_start < _MIN_PLAY_S * fs:
                notes.append(
                    f"{ref.name}: a play covering only {(play.ref_end - play.ref_start) / fs:.2f} s of it at "
                    f"{play.offset / fs:.2f} s was not scored (less than {_MIN_PLAY_S:g} s)"
                )
                continue
            found.append((ref, play))
    if not found:
        notes.append(
            "full-reference score: no reference was found in this stream's audio (envelope correlation below "
            f"{min_correlation:g}): " + ", ".join(r.name for r in references)
        )
    found.sort(key=lambda rp: rp[1].offset)
    return found, notes


def _cut(found: Sequence[tuple[Reference, Play]], i: int, n: int, margin: int) -> tuple[int, int]:
    """The part of the received audio (``n`` samples) scored for play ``i``: the play, ``margin`` around it."""
    play = found[i][1]
    lo, hi = play.start - margin, play.end + margin
    if i > 0:
        lo = max(lo, found[i - 1][1].end)
    if i + 1 < len(found):
        hi = min(hi, found[i + 1][1].start)
    return max(0, min(lo, play.start)), min(n, max(hi, play.end))


def score_plays(
    prep: Prep,
    audio: ReceivedAudio,
    played: np.ndarray,
    found: Sequence[tuple[Reference, Play]],
    *,
    emodel_params: Mapping[str, Any],
) -> tuple[list[PlayScore], list[str]]:
    """P.862 MOS-LQO and the seed paper's terms of each located play, and notes.

    ``played`` marks the packets whose audio was played (the delay of a play is the mean
    ``prep.ta_ms`` of the played packets inside it).
    """
    from qoe.voice.p862 import pesq  # noqa: PLC0415 - SciPy, only when references are given

    fs = audio.sample_rate
    mode = "wb" if audio.band == "wb" else "nb"  # P.862.2 for wide-band codecs, P.862 otherwise
    clock = audio.clock_rate or fs
    # sample position of each packet's first sample (RTP time -> samples at fs)
    pos = (prep.stream.packets.ts_ext - audio.ts_first) * fs // clock
    margin = int(_PLAY_MARGIN_S * fs)
    scores: list[PlayScore] = []
    notes: list[str] = []
    for i, (ref, play) in enumerate(found):
        lo, hi = _cut(found, i, audio.samples.shape[0], margin)
        refpart = np.asarray(ref.samples)[play.ref_start : play.ref_end]
        try:
            res = pesq(refpart, audio.samples[lo:hi], fs=fs, mode=mode)
        except QoEError as exc:
            notes.append(f"{ref.name}: the play at {play.offset / fs:.2f} s could not be scored by P.862: {exc}")
            continue
        inside = played & (pos >= play.start) & (pos < play.end)
        ta = float(np.nanmean(prep.ta_ms[inside])) if inside.any() else float(np.nanmean(prep.ta_ms[played]))
        scores.append(
            PlayScore(
                reference=ref.name,
                start_s=play.offset / fs,
                coverage=play.coverage,
                correlation=play.correlation,
                mos_lqo=float(res.mos_lqo),
                pesq_raw=_f(res.raw),
                ta_ms=ta,
                **_z_terms(res.mos_lqo, ta, emodel_params, mode),
            )
        )
        if play.coverage < 1.0:
            notes.append(f"{ref.name}: the play at {play.offset / fs:.2f} s is cut by the capture; "
                         f"{100 * play.coverage:.0f} % of the reference scored")
    return scores, notes


def full_reference(
    prep: Prep,
    references: Sequence[Reference],
    *,
    conceal: str,
    min_correlation: float,
    emodel_params: Mapping[str, Any],
) -> tuple[FullReferenceScore | None, list[str]]:
    """Rebuild the audio of one direction, locate each reference in it, score each play; and notes."""
    s = prep.stream
    if s.srtp is not None and not s.srtp.decrypted:  # RFC 3711: the payloads are ciphertext
        return None, ["full-reference score skipped: the stream is SRTP-encrypted and no key decrypted it"]
    p = s.packets
    if not p.payloads:
        return None, ["full-reference score skipped: the packet payloads were not kept"]
    cut = p.cut_payloads()
    if cut:
        return None, [f"full-reference score skipped: the capture's snapshot length cut {cut} of the stream's "
                      f"{len(p)} payloads: its audio cannot be rebuilt"]
    try:
        decoded = decode_stream(s, played=prep.playout.played, conceal=conceal, playout=prep.playout)  # type: ignore[arg-type]
    except UnsupportedCodecError as exc:
        return None, [f"full-reference score skipped: {exc}"]
    played = prep.playout.played & (p.payload_type == s.payload_type)
    audio = pesq_audio(decoded)
    notes = list(decoded.notes)
    mode = "wb" if audio.band == "wb" else "nb"
    notes.append(f"P.862{'.2 wide-band' if mode == 'wb' else ' narrow-band'} at {audio.sample_rate} Hz "
                 f"({decoded.codec}, decoded at {decoded.sample_rate} Hz)"
                 + ("; the call is scored on the G.107.1 wide-band scale" if mode == "wb" else ""))
    refs, ref_notes = _at_rate(references, audio.sample_rate)
    notes += ref_notes
    found, loc_notes = locate_plays(audio, refs, stream=str(s.key), min_correlation=min_correlation)
    notes += loc_notes
    scores, score_notes = score_plays(prep, audio, played, found, emodel_params=emodel_params)
    notes += score_notes
    if not scores:
        return None, notes
    mos_lqo = float(np.mean([sc.mos_lqo for sc in scores]))
    ta = float(np.mean([sc.ta_ms for sc in scores]))
    return FullReferenceScore(plays=tuple(scores), mos_lqo=mos_lqo, ta_ms=ta,
                              **_z_terms(mos_lqo, ta, emodel_params, mode), band=mode), notes


def _at_rate(references: Sequence[Reference], fs: int) -> tuple[list[Reference], list[str]]:
    """The references at ``fs`` (polyphase resampling, :func:`scipy.signal.resample_poly`), and notes."""
    import scipy.signal  # noqa: PLC0415 - SciPy's signal module (~0.3 s to import), only when a reference needs resampling

    out, notes = [], []
    for ref in references:
        if int(ref.fs) == fs:
            out.append(ref)
            continue
        g = gcd(int(ref.fs), fs)
        x = scipy.signal.resample_poly(np.asarray(ref.samples, dtype=np.float64), fs // g, int(ref.fs) // g)
        out.append(Reference(x, fs, ref.name))
        notes.append(f"reference {ref.name}: resampled from {ref.fs} Hz to {fs} Hz (polyphase) to match the stream")
    return out, notes
