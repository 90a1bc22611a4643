"""``qoe.score``: one call from a capture (and reference media) to a :class:`~qoe.report.Report`.

This is the only module that reads files *and* scores: it scans the capture(s) with
:mod:`qoe.rtp`, loads reference speech with :func:`qoe.voice.load_speech` and hands
arrays to the pure scorers (:func:`qoe.voice.call.score_calls`).

Kinds: ``"voice"`` (RTP audio calls) is implemented; ``"video"`` and ``"web"`` are not
yet, and asking for them raises :class:`~qoe.errors.InputError` rather than returning
an empty report. ``"auto"`` scores every kind that is implemented (today: voice).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Union

import numpy as np

from qoe.errors import InputError, QoEWarning, StreamNotFoundError
from qoe.report import Report

__all__ = ["score", "KINDS", "VOICE_OPTIONS"]

#: Every kind :func:`score` knows, and whether it is implemented yet.
KINDS = {"auto": True, "voice": True, "video": False, "web": False}

#: Options of the voice scorer that :func:`score` passes on (see :func:`qoe.voice.call.score_call`).
VOICE_OPTIONS = (
    "sender_capture", "one_way_ms", "user", "jitter_buffer", "conceal", "delay_basis", "window_s", "codec",
    "clocks", "min_correlation", "emodel_params", "ssrc",
)

# G.711 (RFC 3551 §4.5.14) is sampled at 8000 Hz: references are brought to this rate.
_G711_RATE = 8000

PathLike = Union[str, "os.PathLike[str]"]
ReferenceLike = Union[PathLike, Any]


def _load_references(reference: Any) -> tuple[list[Any], list[str]]:
    """Reference paths, arrays or Reference objects → Reference objects at 8 kHz, and notes."""
    from qoe.voice.call import Reference  # noqa: PLC0415
    from qoe.voice.p862 import load_speech  # noqa: PLC0415

    if reference is None:
        return [], []
    items = list(reference) if isinstance(reference, (list, tuple)) else [reference]
    out, notes = [], []
    for i, item in enumerate(items):
        if isinstance(item, Reference):
            out.append(item)
        elif isinstance(item, (str, os.PathLike)):
            path = Path(item)
            x, fs = load_speech(path)
            if fs != _G711_RATE:
                x, _ = load_speech(path, fs=_G711_RATE)
                notes.append(f"reference {path.name}: resampled from {fs} Hz to {_G711_RATE} Hz (polyphase)")
                fs = _G711_RATE
            out.append(Reference(np.asarray(x), int(fs), path.name))
        else:
            raise InputError(
                f"reference #{i + 1}: give a file path or a qoe.voice.call.Reference(samples, fs, name); "
                f"given a {type(item).__name__}"
            )
    return out, notes


def score(
    capture: PathLike,
    reference: ReferenceLike | Sequence[ReferenceLike] | None = None,
    kind: Literal["auto", "voice", "video", "web"] = "auto",
    **options: Any,
) -> Report:
    """Score the quality of experience of everything scorable in a capture.

    Parameters
    ----------
    capture : str or path-like
        A pcap or pcapng file. For voice, take it at the user's end of the calls.
    reference : path, Reference, or a list of them, optional
        Reference speech (WAV or any file libsndfile reads; resampled to 8 kHz when it
        is not). Each is looked for in every stream; plays found get the full-reference
        score (the seed paper's z1 − z2). Without one, the network-side scores only.
    kind : {"auto", "voice", "video", "web"}
        What to score. Only voice is implemented yet: ``"video"`` and ``"web"`` raise
        :class:`~qoe.errors.InputError`; ``"auto"`` scores voice.
    **options
        Voice options (:data:`VOICE_OPTIONS`):

        ``sender_capture`` (path)
            A capture taken at the far end: one-way delays are measured, and each
            stream is scored at its receiving end.
        ``one_way_ms`` (float)
            Network one-way delay of the least-delayed packet when it is not measured.
        ``user`` (str)
            The user's IP address (labels "user talks" / "user listens").
        ``jitter_buffer`` ("adaptive" | "fixed:<ms>" | "none"), ``conceal``
        ("repeat" | "silence"), ``delay_basis`` ("conversation" | "direction"),
        ``window_s`` (float), ``codec`` (G.113 preset), ``clocks`` ("auto" | "same" |
        "different"), ``min_correlation`` (float), ``emodel_params`` (dict)
            See :func:`qoe.voice.call.score_call`.
        ``ssrc`` (int or "0x...")
            Score only the call holding this stream.

    Returns
    -------
    Report
        One result per stream (direction) of each call.

    Raises
    ------
    InputError
        An unknown kind or option, a kind not implemented yet, a bad reference.
    CaptureError
        A file that is not a readable capture.
    StreamNotFoundError
        ``kind="voice"`` and no RTP audio stream in the capture, or no stream with ``ssrc``.

    Warns
    -----
    QoEWarning
        ``kind="auto"`` and nothing scorable found; a delay that had to be assumed; a
        reference found in no stream.

    Examples
    --------
    >>> import qoe
    >>> report = qoe.score("data/voice/captures/up-b256_client.pcap",            # doctest: +SKIP
    ...                    reference=["data/voice/speech/en_us_male_8k.wav"],
    ...                    sender_capture="data/voice/captures/up-b256_server.pcap")
    >>> report.to_frame()[["direction", "mos_lqo", "z1", "z2", "mos"]]          # doctest: +SKIP
    """
    if kind not in KINDS:
        raise InputError(f"kind must be one of {', '.join(map(repr, KINDS))}; given kind={kind!r}")
    if not KINDS[kind]:
        raise InputError(
            f"kind={kind!r} is not supported yet: this version of qoe scores voice calls only "
            "(use kind='voice' or 'auto')"
        )
    unknown = sorted(set(options) - set(VOICE_OPTIONS))
    if unknown:
        raise InputError(f"unknown option(s) {', '.join(unknown)}; voice options are: {', '.join(VOICE_OPTIONS)}")
    return _score_voice(os.fspath(capture), reference, strict=(kind == "voice"), **options)


def _score_voice(capture: str, reference: Any, *, strict: bool, **options: Any) -> Report:
    from qoe.voice.call import score_calls  # noqa: PLC0415 - keeps `import qoe` light
    from qoe.voice.io import parse_ssrc  # noqa: PLC0415
    from qoe.rtp import scan_capture  # noqa: PLC0415

    refs, notes = _load_references(reference)
    sender = options.pop("sender_capture", None)
    ssrc = parse_ssrc(options.pop("ssrc", None))
    user = options.pop("user", None)
    clocks = options.pop("clocks", "auto")
    scan = scan_capture(capture)
    sender = os.fspath(sender) if sender is not None else None
    far = scan_capture(sender) if sender is not None else None
    audio = [s for s in scan.streams if s.media == "audio" and s.clock_rate]
    left_out = len(scan.streams) - len(audio)
    if left_out:
        notes.append(f"{left_out} RTP stream(s) that are not audio (video, or a payload type without a known clock rate) were left out")
    inputs: dict[str, Any] = {
        "capture": capture,
        "sender_capture": sender,
        "references": [r.name for r in refs],
        "user": user,
        "clocks": clocks,
        **{k: (str(v) if k == "jitter_buffer" else v) for k, v in options.items()},
    }
    if not audio:
        msg = f"{capture}: no RTP audio stream found in {scan.udp_packets} UDP datagrams"
        if strict:
            raise StreamNotFoundError(msg)
        warnings.warn(msg + " (video and web scoring are not available yet)", QoEWarning, stacklevel=3)
        return Report(kind="voice", source=capture, results=(), inputs=inputs, notes=tuple(notes))
    calls = score_calls(
        audio,
        sender_streams=list(far.streams) if far is not None else None,
        sip_calls=scan.calls,
        sender_sip_calls=far.calls if far is not None else (),
        references=refs,
        user=user,
        capture=Path(capture).name,
        sender_capture=Path(sender).name if sender is not None else None,
        clocks=clocks,
        **options,
    )
    if ssrc is not None:
        calls = [c for c in calls if any(d.ssrc == ssrc for d in c.directions)]
        if not calls:
            present = ", ".join(f"0x{s.ssrc:08x}" for s in audio)
            raise StreamNotFoundError(f"{capture}: no RTP audio stream with SSRC 0x{ssrc:08x}; present: {present}")
    results = tuple(d for c in calls for d in c.directions)
    for c in calls:
        notes.extend(f"call {c.call_id}: {n}" for n in c.notes)
    return Report(kind="voice", source=capture, results=results, inputs=inputs, notes=tuple(notes))
