"""``qoe.score``: one call from a capture (and reference media) to a :class:`~qoe.report.Report`.

This is the only module that reads files *and* scores: it scans the capture(s) with
:mod:`qoe.rtp`, loads reference speech with :func:`qoe.voice.load_speech` and hands
arrays and one :class:`~qoe.voice.CallOptions` to the pure scorers
(:func:`qoe.voice.score_calls`).

Kinds: ``"voice"`` (RTP audio calls), ``"video"`` (RTP and UDP video streams),
``"web"`` (HTTP and HTTPS page loads over TCP) and ``"streaming"`` (DASH and HLS sessions:
:func:`qoe.video.has.sessions`). ``"auto"`` scores every kind present in the capture.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import warnings
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, Union

import numpy as np

from qoe.errors import InputError, QoEError, QoEWarning, StreamNotFoundError
from qoe.report import Report

__all__ = ["score", "iter_score", "ScoreStream", "KINDS", "SHARED_OPTIONS"]

#: Every kind :func:`score` knows (all implemented; the flag is kept for callers that check it).
KINDS = {"auto": True, "voice": True, "video": True, "web": True, "streaming": True}

# Option names of earlier versions -> their CallOptions field (the old name meant something else
# than the one-way delay of qoe.voice.emodel, hence the rename).
_RENAMED = {"one_way_ms": "network_delay_ms"}

# P.862 scores 8 kHz speech, P.862.2 16 kHz speech: references are kept at one of these
# rates (each direction brings them to its codec's, qoe.voice.decode.pesq_audio).
_PESQ_RATES = (8000, 16000)

PathLike = Union[str, "os.PathLike[str]"]
ReferenceLike = Union[PathLike, Any]


def _load_references(reference: Any) -> tuple[list[Any], list[str]]:
    """Reference paths, arrays or Reference objects → Reference objects at 8 kHz, and notes."""
    if reference is None:  # before the imports: P.862's SciPy signal module is ~90 MiB of resident memory
        return [], []
    from qoe.voice.call import Reference  # noqa: PLC0415 - keeps `import qoe` light
    from qoe.voice.p862 import load_speech  # noqa: PLC0415

    items = list(reference) if isinstance(reference, (list, tuple)) else [reference]
    out, notes = [], []
    for i, item in enumerate(items):
        if isinstance(item, Reference):
            out.append(item)
        elif isinstance(item, (str, os.PathLike)):
            path = Path(item)
            x, fs = load_speech(path)
            if fs not in _PESQ_RATES:
                want = _PESQ_RATES[-1] if fs > _PESQ_RATES[-1] else _PESQ_RATES[0]
                x, _ = load_speech(path, fs=want)
                notes.append(f"reference {path.name}: resampled from {fs} Hz to {want} Hz (polyphase)")
                fs = want
            out.append(Reference(np.asarray(x), int(fs), path.name))
        else:
            raise InputError(
                f"reference #{i + 1}: give a file path or a qoe.voice.Reference(samples, fs, name); "
                f"given a {type(item).__name__}"
            )
    return out, notes


def _is_audio_file(path: Path) -> bool:
    """Whether libsndfile reads ``path`` (speech for voice; anything else is taken for video)."""
    import soundfile  # noqa: PLC0415 - libsndfile, only when references are given

    try:
        soundfile.info(str(path))
    except Exception:  # noqa: BLE001 - libsndfile raises its own errors for every unreadable file
        return False
    return True


def _split_references(reference: Any) -> dict[str, list[Any]]:
    """References per kind: a ``{"voice": ..., "video": ...}`` mapping, or items sorted by what they are."""
    if reference is None:
        return {"voice": [], "video": []}
    if isinstance(reference, dict):
        unknown = sorted(set(reference) - {"voice", "video"})
        if unknown:
            raise InputError(f"reference: unknown kind(s) {', '.join(map(repr, unknown))}; use 'voice' and 'video'")
        out = {}
        for k in ("voice", "video"):
            v = reference.get(k)
            out[k] = [] if v is None else list(v) if isinstance(v, (list, tuple)) else [v]
        return out
    items = list(reference) if isinstance(reference, (list, tuple)) else [reference]
    out = {"voice": [], "video": []}
    for item in items:
        if isinstance(item, (str, os.PathLike)) and Path(item).is_file() and not _is_audio_file(Path(item)):
            out["video"].append(item)
        else:
            out["voice"].append(item)  # speech, a Reference, or something _load_references rejects clearly
    return out


def _option_classes() -> dict[str, type]:
    from qoe.video.stream import VideoOptions  # noqa: PLC0415
    from qoe.voice.call import CallOptions  # noqa: PLC0415 - keeps `import qoe` light
    from qoe.video.has.options import StreamingOptions  # noqa: PLC0415
    from qoe.web.pages import WebOptions  # noqa: PLC0415

    return {"voice": CallOptions, "video": VideoOptions, "web": WebOptions, "streaming": StreamingOptions}


#: Options that name the same secrets for every kind that takes them (an NSS key log, SRTP
#: keys): as a keyword one goes to each of those kinds, as ``qoe score --keylog`` and
#: ``--srtp-key`` do, rather than being ambiguous.
SHARED_OPTIONS = frozenset({"keylog", "srtp_keys"})


def _options_for(options: Any, fields: dict[str, Any], kind: str = "auto") -> dict[str, Any]:
    """The options of each kind from ``options`` and the option ``fields`` given as keywords.

    ``options`` is a CallOptions, a VideoOptions, a WebOptions, a ``{"voice": ..., "video":
    ..., "web": ...}`` mapping of them, or None (defaults). A keyword goes to the kind that has
    an option of that name; with ``kind="auto"`` a name two kinds share (``jitter_buffer``) is
    ambiguous and an error, as is a keyword for a kind whose options object is given too (one
    way to pass an option: nothing silently overrides the object).
    """
    classes = _option_classes()
    given = options if isinstance(options, dict) else {} if options is None else {"_": options}
    out = {k: cls() for k, cls in classes.items()}
    explicit: set[str] = set()
    for key, opt in given.items():
        k = next((k for k, cls in classes.items() if isinstance(opt, cls)), None)
        if k is None or key not in ("_", k):
            raise InputError(
                "options must be a qoe.voice.CallOptions, a qoe.video.VideoOptions, a qoe.web.WebOptions, a "
                "qoe.video.has.StreamingOptions, or a mapping {'voice': CallOptions, 'video': VideoOptions, "
                f"'web': WebOptions, 'streaming': StreamingOptions}}; given "
                f"{type(opt).__name__}" + (f" for {key!r}" if key != "_" else "")
            )
        out[k] = opt
        explicit.add(k)
    for old, new in _RENAMED.items():
        if old in fields:
            warnings.warn(f"qoe.score: option {old!r} is now {new!r}", DeprecationWarning, stacklevel=4)
            fields[new] = fields.pop(old)
    taken: dict[str, dict[str, Any]] = {k: {} for k in classes}
    for name, value in fields.items():
        owners = [k for k, cls in classes.items() if name in cls.names()]
        if kind in owners:
            owners = [kind]
        if not owners:
            lists = "; ".join(f"{k} options: {', '.join(cls.names())}" for k, cls in classes.items())
            raise InputError(f"unknown option(s) {name}; {lists}")
        if len(owners) > 1 and name not in SHARED_OPTIONS:
            spelled = ", ".join(f"{k}: {classes[k].__name__}({name}=...)" for k in owners)
            raise InputError(
                f"option {name!r} is ambiguous: it is an option of {' and '.join(owners)}; pass kind= or "
                f"options={{{spelled}}}"
            )
        for owner in owners:
            if owner in explicit:
                cls = classes[owner].__name__
                raise InputError(
                    f"option {name!r} given both as a keyword and in options={cls}(...): give it once, "
                    f"as {cls}({name}=...)"
                )
            taken[owner][name] = value
    return {k: out[k].replace(**taken[k]) if taken[k] else out[k] for k in classes}


def score(
    capture: PathLike,
    reference: ReferenceLike | Sequence[ReferenceLike] | None = None,
    *,
    kind: Literal["auto", "voice", "video", "web", "streaming"] = "auto",
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
    reference : path, Reference, a list of them, or {"voice": ..., "video": ...}, optional
        Reference speech (WAV or any file libsndfile reads; kept at 8 or 16 kHz, other
        rates resampled to the nearer of the two, then to each stream's P.862 rate: 8 kHz
        for narrow-band codecs, 16 kHz for wide-band ones): each is looked for in every stream; plays found get the full-reference
        score (the seed paper's z1 − z2). Reference video (any other file, read with
        FFmpeg; at most one): every video stream is scored against it frame by frame.
        A path libsndfile reads is speech, any other path video; a mapping says which is
        which. Without a reference, the network-side scores and stream facts only.
    kind : {"auto", "voice", "video", "web"}, keyword-only
        What to score: ``"voice"`` (RTP audio calls), ``"video"`` (RTP and UDP video
        streams), ``"web"`` (page loads: :func:`qoe.web.page_loads`), ``"auto"`` (every
        kind the capture holds).
    options : CallOptions, VideoOptions, WebOptions, or a mapping of kind to them, optional, keyword-only
        How to score voice calls (:class:`qoe.voice.CallOptions`: jitter buffer,
        concealment, delay basis, window, codec preset, the user's end, ...) and video
        streams (:class:`qoe.video.VideoOptions`: SDP, jitter buffer, SSIM variant, PSNR
        table) and page loads (:class:`qoe.web.WebOptions`: idle gap, G.1030 bounds).
        Default: the defaults of each.
    sender_capture : str or path-like, optional, keyword-only
        A capture taken at the far end: one-way delays are measured, and each stream is
        scored at its receiving end.
    ssrc : int or str ("0x..."), optional, keyword-only
        Score only the call holding this stream.
    **option_fields
        Fields of :class:`~qoe.voice.CallOptions`, :class:`~qoe.video.VideoOptions` or
        :class:`~qoe.web.WebOptions` given as keywords (``qoe.score(cap, kind="voice",
        jitter_buffer="fixed:60")``), for a kind whose options object is not given. A name
        two kinds share (``jitter_buffer``) needs ``kind=`` or the options objects, but for
        the keys (``keylog``: web and streaming; ``srtp_keys``: voice and video), which go
        to every kind that takes them (:data:`SHARED_OPTIONS`), as on the command line.

    Returns
    -------
    Report
        One result per stream (direction) of each call and one per video stream;
        ``inputs`` holds the options.

    Raises
    ------
    InputError
        An unknown kind or option, an ambiguous option (a name two kinds share without
        ``kind=``, or a keyword for a kind whose options object is given), a bad reference.
    CaptureError
        A file that is not a readable capture.
    StreamNotFoundError
        ``kind="voice"`` and no RTP audio stream in the capture, or no stream with
        ``ssrc``; ``kind="video"`` and no video stream.

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
    stream = _stream(capture, reference, kind, options, sender_capture, ssrc, option_fields)
    results = tuple(stream)
    return dataclasses.replace(stream.report(), results=results)


class ScoreStream:
    """The results of :func:`iter_score` one at a time, then the rest of the report.

    Iterate it (once) for the results, each as soon as it is final: voice call directions,
    then video streams, then page loads, in the order of :attr:`Report.results`. Once every
    result has been given, :meth:`report` returns the :class:`~qoe.report.Report` without
    its results (``results=()``): its kind, source, inputs and notes, which depend on what
    was found.
    """

    __slots__ = ("_items", "_report")

    def __init__(self, items: Generator[Any, None, Report]) -> None:
        self._items = items
        self._report: Report | None = None

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        try:
            return next(self._items)
        except StopIteration as stop:
            if self._report is None and stop.value is not None:
                self._report = stop.value
            raise StopIteration from None

    def report(self) -> Report:
        """The report without its results: kind, source, inputs and notes.

        Raises
        ------
        InputError
            Some results have not been iterated yet (the notes and the kind depend on them).
        """
        if self._report is None:
            raise InputError("ScoreStream.report(): iterate over every result first (the report's kind and notes "
                             "depend on what was found)")
        return self._report


def iter_score(
    capture: PathLike,
    reference: ReferenceLike | Sequence[ReferenceLike] | None = None,
    *,
    kind: Literal["auto", "voice", "video", "web", "streaming"] = "auto",
    options: Any = None,
    sender_capture: PathLike | None = None,
    ssrc: int | str | None = None,
    **option_fields: Any,
) -> ScoreStream:
    """:func:`score` as a stream: each result as soon as it is final, in memory flat in the number of results.

    Parameters
    ----------
    capture, reference, kind, options, sender_capture, ssrc, **option_fields
        As :func:`score`.

    Returns
    -------
    ScoreStream
        An iterator (once) over the results :func:`score` returns, in the same order; then
        ``.report()`` gives the rest of that report (``results=()``). ``score(...)`` is
        ``dataclasses.replace(s.report(), results=tuple(s))`` of ``s = iter_score(...)``.

    Raises
    ------
    InputError
        An unknown kind or option (at the call); a bad reference (at the call, or when the
        kind it is for is reached).
    CaptureError, StreamNotFoundError
        As :func:`score`, while iterating.

    Warns
    -----
    QoEWarning
        As :func:`score`, while iterating.

    Examples
    --------
    >>> from qoe.report import ReportWriter                                   # doctest: +SKIP
    >>> stream = iter_score("big.pcap", kind="web")                          # doctest: +SKIP
    >>> with ReportWriter() as writer:                                       # doctest: +SKIP
    ...     for result in stream:
    ...         writer.add(result)
    ...     text = "".join(writer.json_chunks(stream.report()))
    """
    return _stream(capture, reference, kind, options, sender_capture, ssrc, option_fields)


def _stream(capture: PathLike, reference: Any, kind: str, options: Any, sender_capture: PathLike | None, ssrc: Any,
            option_fields: dict[str, Any]) -> ScoreStream:
    """:func:`iter_score`, called by it and by :func:`score` (a deprecated option's warning names
    their caller: ``stacklevel=4`` of :func:`_options_for`)."""
    if kind not in KINDS:
        raise InputError(f"kind must be one of {', '.join(map(repr, KINDS))}; given kind={kind!r}")
    opts = _options_for(options, dict(option_fields), kind)
    refs = _split_references(reference)
    from qoe.capture import capture_path  # noqa: PLC0415 - keeps `import qoe` light

    cap = capture_path(capture)
    sender = capture_path(sender_capture, "sender_capture") if sender_capture is not None else None
    return ScoreStream(_iter_kinds(cap, kind, refs, opts, sender=sender, ssrc=ssrc))


#: A kind's generator: its results, then (returned) its report without results and how many it gave.
_Part = Generator[Any, None, tuple[Report, int]]


def _iter_kinds(cap: str, kind: str, refs: dict[str, list[Any]], opts: dict[str, Any], *, sender: str | None,
                ssrc: Any) -> Generator[Any, None, Report]:
    """The results of each kind asked for, in turn; returns the report without results."""
    parts: list[tuple[Report, int]] = []
    scan: Callable[[], Any] | None = None
    if kind == "auto" and sender is None:  # one streaming RTP scan: calls scored as they end, video streams kept
        kept: dict[str, Any] = {}
        parts.append((yield from _iter_voice(cap, refs["voice"], sender=None, ssrc=ssrc, options=opts["voice"],
                                             strict=False, video_scan=kept, sdp=opts["video"].sdp)))
        scan = functools.partial(kept.pop, "scan")
    elif kind in ("voice", "auto"):
        if kind == "auto":  # one RTP scan of the whole capture for voice and video (and the sender capture's)
            scan = _scan_once(cap, opts["video"].sdp, opts["voice"].stream_timeout_s)
        parts.append((yield from _iter_voice(cap, refs["voice"], sender=sender, ssrc=ssrc, options=opts["voice"],
                                             strict=(kind == "voice"), scan_of=scan)))
    if kind in ("video", "auto"):
        parts.append((yield from _iter_video(cap, refs["video"], options=opts["video"], strict=(kind == "video"),
                                             scan=scan)))
        del scan  # its streams' packet files are closed when the last stream is gone
    media: list[Any] | None = [] if kind == "auto" else None  # auto: streaming reuses web's transactions
    if kind in ("web", "auto"):
        parts.append((yield from _iter_web(cap, options=opts["web"], strict=(kind == "web"), media=media)))
    if kind in ("streaming", "auto"):
        parts.append((yield from _iter_streaming(cap, options=opts["streaming"], strict=(kind == "streaming"),
                                                 transactions=media)))
    if kind != "auto":
        return parts[0][0]
    return _merged(cap, parts, refs)


def _iter_web(capture: str, *, options: Any, strict: bool, media: list[Any] | None = None) -> _Part:
    from qoe.web.pages import iter_page_loads  # noqa: PLC0415 - keeps `import qoe` light

    if media is not None:
        from qoe.video.has.session import may_be_streaming  # noqa: PLC0415 - keeps `import qoe` light
    found = 0
    for page in iter_page_loads(capture, options=options):
        found += 1
        if media is not None:  # only manifests and media responses are kept: memory stays flat otherwise
            media.extend(t for t in page.transactions if may_be_streaming(t))
        yield page
    if not found and strict:
        raise StreamNotFoundError(f"{capture}: no page load found (no HTTP transaction, no TLS connection over TCP, no QUIC connection)")
    return Report(kind="web", source=capture, results=(), inputs={"capture": capture, **options.to_dict()}), found


def _iter_streaming(capture: str, *, options: Any, strict: bool, transactions: list[Any] | None = None) -> _Part:
    from qoe.video.has.session import sessions  # noqa: PLC0415 - keeps `import qoe` light

    # web's cleartext transactions when read already (a key log: the decrypted ones, read there)
    found_sessions = sessions(capture, options=options, transactions=transactions)
    for s in found_sessions:
        yield s
    if not found_sessions and strict:
        raise StreamNotFoundError(f"{capture}: no adaptive streaming session found (no DASH MPD or HLS playlist in "
                                  "the cleartext HTTP transactions)")
    return Report(kind="streaming", source=capture, results=(), inputs={"capture": capture, **options.to_dict()}), \
        len(found_sessions)


def _cut_datagrams(capture: str) -> str:
    """Why nothing may have been found: the UDP datagrams the capture's snapshot length cut
    (what tells RTP or MPEG-TS apart, a whole number of 188-byte packets, may be in the bytes
    left out), as a clause for the warning; "" when none was (one more read of the file)."""
    from qoe.capture import read_udp_batches  # noqa: PLC0415 - keeps `import qoe` light

    try:
        cut = total = 0
        for b in read_udp_batches(capture):
            cut += int(np.count_nonzero(b.cut))
            total += len(b.cut)
    except (QoEError, OSError):
        return ""
    if not cut:
        return ""
    return (f"; the capture's snapshot length cut {cut} of its {total} UDP datagrams: what tells media apart may be "
            "in the bytes left out (capture whole packets, tcpdump -s 0)")


def _merged(capture: str, parts: list[tuple[Report, int]], refs: dict[str, list[Any]]) -> Report:
    """The report (without results) of the kinds found (``kind="auto"``), from each kind's
    and its number of results; a warning when none was found.

    With one kind found, its report (inputs as that kind's); with several, ``inputs`` holds
    each kind's under its name.
    """
    found = [p for p, n in parts if n]
    notes = tuple(n for p, _ in parts for n in p.notes)
    inputs = {p.kind: p.inputs for p, _ in parts}
    if not found:
        warnings.warn(f"{capture}: nothing scorable found (no RTP audio or video stream, no MPEG-TS in UDP, "
                      f"no page load, no streaming session){_cut_datagrams(capture)}",
                      QoEWarning, stacklevel=3)
        return Report(kind="auto", source=capture, results=(), inputs=inputs, notes=notes)
    for k in ("voice", "video"):
        if refs[k] and not any(p.kind == k for p in found):
            notes += (f"the {k} reference was given but the capture holds no {k} stream",)
    if len(found) == 1:  # one kind: its report as kind= that kind gives it, with every note
        return dataclasses.replace(found[0], notes=notes)
    return Report(kind="+".join(p.kind for p in found), source=capture, results=(), inputs=inputs, notes=notes)


def _scan_once(capture: str, sdp: Any = None, stream_timeout_s: float | None = None) -> Any:
    """A function that returns ``qoe.rtp.scan_capture(capture, sdp=...)`` (the video options'
    SDP file, applied under BUNDLE too), scanning on its first call only."""
    from qoe.rtp import scan_capture  # noqa: PLC0415 - keeps `import qoe` light
    from qoe.video.flows import load_sdp  # noqa: PLC0415

    done: list[Any] = []

    def scan() -> Any:
        if not done:
            kw = {} if stream_timeout_s is None else {"stream_timeout_s": stream_timeout_s}
            done.append(scan_capture(capture, sdp=load_sdp(sdp), **kw))
        return done[0]

    return scan


def _iter_video(capture: str, reference: list[Any], *, options: Any, strict: bool, scan: Any = None) -> _Part:
    from qoe.video.stream import iter_score_capture  # noqa: PLC0415 - keeps `import qoe` light

    if len(reference) > 1:
        raise InputError(f"give at most one reference video; given {len(reference)}: {', '.join(map(str, reference))}")
    ref = os.fspath(reference[0]) if reference else None
    if ref is not None and not Path(ref).is_file():
        raise InputError(f"reference video {ref}: no such file")
    inputs = {"capture": capture, "reference": ref, **options.to_dict()}
    found = 0
    for result in iter_score_capture(capture, ref, options=options, scan=scan() if scan is not None else None):
        found += 1
        yield result
    if not found and strict:
        raise StreamNotFoundError(f"{capture}: no video stream found (RTP video, or MPEG-TS in UDP)")
    return Report(kind="video", source=capture, results=(), inputs=inputs), found


def _decrypt(capture: str, audio: list[Any], want: int | None, keys: tuple[str, ...], notes: list[str],
             *, strict: bool = True) -> list[Any]:
    """Audio streams with SRTP ones decrypted (:func:`qoe.rtp.decrypt.decrypt_streams`).

    An SRTP stream that no key decrypts raises :class:`EncryptedStreamError` when voice was
    asked for (``strict``), unless the user asked for another stream by SSRC; otherwise
    (``kind="auto"``: the capture's other contents must still be scored) it is kept,
    scored from its headers only, and a note says so."""
    from qoe.rtp.decrypt import decrypt_streams  # noqa: PLC0415 - pylibsrtp, only for SRTP

    keep = want is not None or not strict
    out = decrypt_streams(capture, audio, keys=keys, missing="keep" if keep else "raise")
    for s in out:
        if s.srtp is None:
            continue
        if not s.srtp.decrypted and s.ssrc == want:
            decrypt_streams(capture, [s], keys=keys)  # raises, naming the stream and what to pass
        if not s.srtp.decrypted and want is None:
            notes.append(f"stream {s.key}: SRTP-encrypted and no key decrypts it: scored from its packet headers "
                         "only (give the key: srtp_keys= / --srtp-key SUITE:BASE64)")
        if s.srtp.decrypted:
            fail = f"; {s.srtp.auth_failures} packet(s) failed authentication and count as lost" if s.srtp.auth_failures else ""
            notes.append(f"stream {s.key}: SRTP decrypted ({s.srtp.suite}, key from {s.srtp.key_source}){fail}")
    return out


def _voice_inputs(capture: str, sender: str | None, refs: list[Any], want: int | None, options: Any,
                  left_out: int, strict: bool, notes: list[str]) -> dict[str, Any]:
    """The voice report's ``inputs``; with ``strict``, a note on the ``left_out`` streams that are not audio."""
    if left_out and strict:
        notes.append(f"{left_out} RTP stream(s) that are not audio (video, or a payload type without a known clock "
                     "rate) were left out")
    return {
        "capture": capture,
        "sender_capture": sender,
        "references": [r.name for r in refs],
        "ssrc": None if want is None else f"0x{want:08x}",
        **options.to_dict(),
    }


def _iter_voice(capture: str, reference: Any, *, sender: str | None, ssrc: Any, options: Any, strict: bool,
                scan_of: Any = None, video_scan: dict[str, Any] | None = None, sdp: Any = None) -> _Part:
    from qoe.rtp import scan_capture  # noqa: PLC0415 - keeps `import qoe` light
    from qoe.voice.call import iter_score_calls  # noqa: PLC0415
    from qoe.voice.identify import recognised_audio  # noqa: PLC0415
    from qoe.voice.io import parse_ssrc  # noqa: PLC0415

    refs, notes = _load_references(reference or None)
    want = parse_ssrc(ssrc)
    if scan_of is None and sender is None:  # one capture: calls scored as they end, memory flat
        return (yield from _iter_voice_streaming(capture, refs, notes, want=want, options=options, strict=strict,
                                                 video_scan=video_scan, sdp=sdp))
    scan = scan_capture(capture, stream_timeout_s=options.stream_timeout_s) if scan_of is None else scan_of()
    far = scan_capture(sender, stream_timeout_s=options.stream_timeout_s) if sender is not None else None
    # audio with a known clock, or a dynamic payload type without SDP whose payloads show an audio codec
    audio = [s for s in scan.streams if (s.media == "audio" and s.clock_rate) or recognised_audio(s) is not None]
    audio = _decrypt(capture, audio, want, options.srtp_keys, notes, strict=strict)
    inputs = _voice_inputs(capture, sender, refs, want, options, len(scan.streams) - len(audio), strict, notes)
    if not audio:
        msg = f"{capture}: no RTP audio stream found in {scan.udp_packets} UDP datagrams"
        if strict:
            raise StreamNotFoundError(msg)
        return Report(kind="voice", source=capture, results=(), inputs=inputs, notes=()), 0
    calls = iter_score_calls(
        audio,
        sender_streams=list(far.streams) if far is not None else None,
        sip_calls=scan.calls,
        sender_sip_calls=far.calls if far is not None else (),
        references=refs,
        capture=Path(capture).name,
        sender_capture=Path(sender).name if sender is not None else None,
        options=options,
    )
    mark = _cut_marker([*scan.calls, *(far.calls if far is not None else ())], audio)
    found = 0
    for c in calls:
        if want is not None and not any(d.ssrc == want for d in c.directions):
            continue
        found += len(c.directions)
        yield from map(mark, c.directions)
        notes.extend(f"call {c.call_id}: {n}" for n in c.notes)
    if want is not None and not found:
        present = ", ".join(f"0x{s.ssrc:08x}" for s in audio)
        raise StreamNotFoundError(f"{capture}: no RTP audio stream with SSRC 0x{want:08x}; present: {present}")
    return Report(kind="voice", source=capture, results=(), inputs=inputs, notes=tuple(notes)), found


def _iter_voice_streaming(capture: str, refs: list[Any], notes: list[str], *, want: int | None, options: Any,
                          strict: bool, video_scan: dict[str, Any] | None = None, sdp: Any = None) -> _Part:
    """:func:`_iter_voice` on one capture, call by call as its streams end (:func:`qoe.rtp.iter_scan`):
    the same results in the same order, nothing kept of a call once it is given.

    With ``video_scan`` (``kind="auto"``: one scan for voice and video, ``sdp`` the video
    options' SDP, applied by the scan as :func:`_scan_once` does), the streams video needs
    (:func:`qoe.video.flows.needed_for_video`) are kept, with their calls' SIP calls, and
    ``video_scan["scan"]`` is then the :class:`qoe.rtp.RtpScan` of them that
    :func:`qoe.video.flows.find_video` takes; every other stream is released with its call.
    """
    from qoe.rtp import iter_scan  # noqa: PLC0415 - keeps `import qoe` light
    from qoe.voice.call import iter_score_call_groups  # noqa: PLC0415
    from qoe.voice.identify import recognised_audio  # noqa: PLC0415

    media: list[Any] = []
    if video_scan is not None:
        from qoe.video.flows import load_sdp, needed_for_video  # noqa: PLC0415

        media = load_sdp(sdp)
    stream = iter_scan(capture, stream_timeout_s=options.stream_timeout_s, sdp=media)
    kept: list[Any] = []  # the video streams (and their RTX streams), for video_scan
    kept_calls: dict[str, Any] = {}
    count = {"streams": 0, "audio": 0}
    present: list[int] = []  # the audio SSRCs, only when one was asked for (for the error)
    mark: list[Callable[[Any], Any]] = []  # the cut marker of the group being scored
    decrypt_notes: list[str] = []  # the notes in the order _iter_voice gives them: decryption, left out, calls
    call_notes: list[str] = []

    def groups() -> Generator[tuple[list[Any], Sequence[Any]], None, None]:
        for streams, calls in stream:
            count["streams"] += len(streams)
            if video_scan is not None:
                video = needed_for_video(streams, media)
                kept.extend(video)
                ids = {s.call_id for s in video if s.call_id}
                kept_calls.update((c.call_id, c) for c in calls if c.call_id in ids)
            audio = [s for s in streams if (s.media == "audio" and s.clock_rate) or recognised_audio(s) is not None]
            if audio:
                audio = _decrypt(capture, audio, want, options.srtp_keys, decrypt_notes, strict=strict)
            count["audio"] += len(audio)
            if want is not None:
                present.extend(s.ssrc for s in audio)
            if not audio:
                continue
            mark[:] = [_cut_marker(calls, audio)]
            yield audio, calls

    found = 0
    for c in iter_score_call_groups(groups(), references=refs, capture=Path(capture).name, options=options):
        if want is not None and not any(d.ssrc == want for d in c.directions):
            continue
        found += len(c.directions)
        yield from map(mark[0], c.directions)
        call_notes.extend(f"call {c.call_id}: {n}" for n in c.notes)
    if video_scan is not None and stream.scan is not None:  # in order of their first packet, as scan_capture's
        kept.sort(key=lambda s: int(s.packets.frame[0]))
        video_scan["scan"] = dataclasses.replace(stream.scan, streams=tuple(kept), calls=tuple(kept_calls.values()))
    notes.extend(decrypt_notes)
    inputs = _voice_inputs(capture, None, refs, want, options, count["streams"] - count["audio"], strict, notes)
    if not count["audio"]:
        msg = f"{capture}: no RTP audio stream found in {stream.scan.udp_packets if stream.scan else 0} UDP datagrams"
        if strict:
            raise StreamNotFoundError(msg)
        return Report(kind="voice", source=capture, results=(), inputs=inputs, notes=()), 0
    if want is not None and not found:
        shown = ", ".join(f"0x{x:08x}" for x in present)
        raise StreamNotFoundError(f"{capture}: no RTP audio stream with SSRC 0x{want:08x}; present: {shown}")
    return Report(kind="voice", source=capture, results=(), inputs=inputs, notes=(*notes, *call_notes)), found


#: The note of a call direction the capture cut: its result covers what the capture holds.
CUT_NOTE = ("partial: the call was answered and the capture holds no BYE or CANCEL for it (RFC 3261 §15): "
            "it went on after the capture ended, and is scored on what the capture holds")


#: The note of a stream without SIP that was still sending when the capture ended (3 is
#: qoe.rtp.ACTIVE_AT_END_INTERVALS, written out to keep ``import qoe`` light).
CUT_STREAM_NOTE = ("partial: the stream was still sending when the capture ended (its last packet within 3 packet "
                   "intervals of the capture's last UDP datagram, no SIP or RTCP BYE): the capture may have cut "
                   "it, and it is scored on what the capture holds")


def _cut_marker(sip_calls: Sequence[Any], streams: Sequence[Any] = ()) -> Callable[[Any], Any]:
    """A function of a call direction's result: the result with :data:`CUT_NOTE` added when its
    SIP call was answered and never ended (no BYE or CANCEL) in either capture, with
    :data:`CUT_STREAM_NOTE` when no SIP call covers its stream and the stream was still
    sending when the capture ended (:attr:`qoe.rtp.RtpStream.active_at_end`, of ``streams``),
    else the result as it is."""
    answered = {c.call_id for c in sip_calls if c.answer_ns is not None}
    ended = {c.call_id for c in sip_calls if c.end_ns is not None}
    signalled = {c.call_id for c in sip_calls}
    cut = answered - ended
    active = {str(s.key) for s in streams if s.active_at_end}

    def mark(d: Any) -> Any:
        if d.call_id in cut:
            return dataclasses.replace(d, notes=(*d.notes, CUT_NOTE))
        if d.call_id not in signalled and d.stream in active:
            return dataclasses.replace(d, notes=(*d.notes, CUT_STREAM_NOTE))
        return d

    return mark
