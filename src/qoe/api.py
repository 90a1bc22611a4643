"""``qoe.score``: one call from a capture (and reference media) to a :class:`~qoe.report.Report`.

This is the only module that reads files *and* scores: it scans the capture(s) with
:mod:`qoe.rtp`, loads reference speech with :func:`qoe.voice.load_speech` and hands
arrays and one :class:`~qoe.voice.CallOptions` to the pure scorers
(:func:`qoe.voice.score_calls`).

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

__all__ = ["score", "KINDS"]

#: Every kind :func:`score` knows, and whether it is implemented yet.
KINDS = {"auto": True, "voice": True, "video": False, "web": False}

# Option names of earlier versions -> their CallOptions field (the old name meant something else
# than the one-way delay of qoe.voice.emodel, hence the rename).
_RENAMED = {"one_way_ms": "network_delay_ms"}

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
                f"reference #{i + 1}: give a file path or a qoe.voice.Reference(samples, fs, name); "
                f"given a {type(item).__name__}"
            )
    return out, notes


def _call_options(options: Any, fields: dict[str, Any]) -> Any:
    """``options`` (a CallOptions, or None for the defaults) with the option ``fields`` given as keywords."""
    from qoe.voice.call import CallOptions  # noqa: PLC0415 - keeps `import qoe` light

    if options is None:
        options = CallOptions()
    elif not isinstance(options, CallOptions):
        raise InputError(f"options must be a qoe.voice.CallOptions; given a {type(options).__name__}")
    for old, new in _RENAMED.items():
        if old in fields:
            warnings.warn(f"qoe.score: option {old!r} is now {new!r}", DeprecationWarning, stacklevel=3)
            fields[new] = fields.pop(old)
    return options.replace(**fields) if fields else options


def score(
    capture: PathLike,
    reference: ReferenceLike | Sequence[ReferenceLike] | None = None,
    *,
    kind: Literal["auto", "voice", "video", "web"] = "auto",
    options: Any = None,
    sender_capture: PathLike | None = None,
    ssrc: int | str | None = None,
    **option_fields: Any,
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
    kind : {"auto", "voice", "video", "web"}, keyword-only
        What to score. Only voice is implemented yet: ``"video"`` and ``"web"`` raise
        :class:`~qoe.errors.InputError`; ``"auto"`` scores voice.
    options : qoe.voice.CallOptions, optional, keyword-only
        How to score voice calls: jitter buffer, concealment, delay basis, window, codec
        preset, the user's end, the network delay when it is not measured, whether the
        two captures share a clock, E-model parameters. Default: ``CallOptions()``.
    sender_capture : str or path-like, optional, keyword-only
        A capture taken at the far end: one-way delays are measured, and each stream is
        scored at its receiving end.
    ssrc : int or str ("0x..."), optional, keyword-only
        Score only the call holding this stream.
    **option_fields
        Fields of :class:`~qoe.voice.CallOptions` given as keywords, applied over
        ``options`` (``qoe.score(cap, jitter_buffer="fixed:60")``).

    Returns
    -------
    Report
        One result per stream (direction) of each call; ``inputs`` holds the options.

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
    >>> from qoe.voice import CallOptions
    >>> report = qoe.score("data/voice/captures/up-b256_client.pcap",            # doctest: +SKIP
    ...                    reference=["data/voice/speech/en_us_male_8k.wav"],
    ...                    sender_capture="data/voice/captures/up-b256_server.pcap",
    ...                    options=CallOptions(jitter_buffer="fixed:60"))
    >>> report.to_frame()[["direction", "mos_lqo", "z1", "z2", "mos"]]          # doctest: +SKIP
    """
    if kind not in KINDS:
        raise InputError(f"kind must be one of {', '.join(map(repr, KINDS))}; given kind={kind!r}")
    if not KINDS[kind]:
        raise InputError(
            f"kind={kind!r} is not supported yet: this version of qoe scores voice calls only "
            "(use kind='voice' or 'auto')"
        )
    opts = _call_options(options, dict(option_fields))
    sender = os.fspath(sender_capture) if sender_capture is not None else None
    return _score_voice(os.fspath(capture), reference, sender=sender, ssrc=ssrc, options=opts, strict=(kind == "voice"))


def _score_voice(capture: str, reference: Any, *, sender: str | None, ssrc: Any, options: Any, strict: bool) -> Report:
    from qoe.rtp import scan_capture  # noqa: PLC0415 - keeps `import qoe` light
    from qoe.voice.call import score_calls  # noqa: PLC0415
    from qoe.voice.io import parse_ssrc  # noqa: PLC0415

    refs, notes = _load_references(reference)
    want = parse_ssrc(ssrc)
    scan = scan_capture(capture)
    far = scan_capture(sender) if sender is not None else None
    audio = [s for s in scan.streams if s.media == "audio" and s.clock_rate]
    left_out = len(scan.streams) - len(audio)
    if left_out:
        notes.append(f"{left_out} RTP stream(s) that are not audio (video, or a payload type without a known clock rate) were left out")
    inputs: dict[str, Any] = {
        "capture": capture,
        "sender_capture": sender,
        "references": [r.name for r in refs],
        "ssrc": None if want is None else f"0x{want:08x}",
        **options.to_dict(),
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
        capture=Path(capture).name,
        sender_capture=Path(sender).name if sender is not None else None,
        options=options,
    )
    if want is not None:
        calls = [c for c in calls if any(d.ssrc == want for d in c.directions)]
        if not calls:
            present = ", ".join(f"0x{s.ssrc:08x}" for s in audio)
            raise StreamNotFoundError(f"{capture}: no RTP audio stream with SSRC 0x{want:08x}; present: {present}")
    results = tuple(d for c in calls for d in c.directions)
    for c in calls:
        notes.extend(f"call {c.call_id}: {n}" for n in c.notes)
    return Report(kind="voice", source=capture, results=results, inputs=inputs, notes=tuple(notes))
