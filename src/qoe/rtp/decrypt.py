"""Decrypting the SRTP streams a scan found: re-read from the capture, decrypted with libsrtp.

:func:`decrypt_streams` takes streams (:class:`qoe.rtp.RtpStream`) of a capture and returns
them with their SRTP payloads decrypted (:func:`qoe.rtp.srtp.decrypt_packets`, libsrtp
through ``pylibsrtp``), keyed by the sender's SDES key from the capture's SDP or by keys
the user gives. It lives apart from :mod:`qoe.rtp.srtp` (which recognises SRTP and
defines :class:`~qoe.rtp.srtp.SrtpInfo`, a field of the stream records) so that the
records and the decryption of streams do not import each other.

References
----------
.. [1] RFC 3711, "The Secure Real-time Transport Protocol (SRTP)", §3.3 (authentication
   and replay), §3.3.1 (rollover counter).
.. [2] RFC 4568, "SDP Security Descriptions for Media Streams", §5.1 (the sender's key).
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np

from qoe.errors import EncryptedStreamError, InputError, QoEWarning, UnsupportedCodecError
from qoe.rtp._packet import RtpPackets, parse_rtp_header
from qoe.rtp._results import RtpStream
from qoe.rtp.srtp import SrtpInfo, SrtpKey, decrypt_packets, parse_srtp_key

__all__ = ["decrypt_streams"]

# How many packets are tried when choosing among candidate keys.
_KEY_PROBE = 16


def _authenticates(packets: Sequence[bytes], key: SrtpKey) -> bool:
    """Whether ``key`` authenticates any of a stream's first packets."""
    try:
        plain, _, _ = decrypt_packets(packets[:_KEY_PROBE], key)
    except (InputError, UnsupportedCodecError):
        return False
    return any(p is not None for p in plain)


def _datagrams(capture: str, frames: set[int]) -> dict[int, bytes]:
    """The UDP payloads of these frames of a capture."""
    # the capture layer (dpkt and the readers, about half of `import qoe.rtp`'s time) is
    # loaded when a stream is decrypted, not when qoe.rtp is imported for its numbers
    from qoe.capture import read_udp_batches  # noqa: PLC0415

    want = np.fromiter(frames, dtype=np.int64, count=len(frames))
    want.sort()
    out: dict[int, bytes] = {}
    for b in read_udp_batches(capture):
        if len(b) == 0:
            continue
        hit = np.flatnonzero(np.isin(b.index, want))
        for i in hit.tolist():
            out[int(b.index[i])] = bytes(b.payload_of(i))
    return out


def _stream_name(capture: str, s: RtpStream) -> str:
    k = s.key
    return f"{capture}: stream 0x{k.ssrc:08x} ({k.src}:{k.sport} -> {k.dst}:{k.dport})"


def _plain_table(p: RtpPackets, plain: list[bytes | None]) -> RtpPackets:
    """The packet table of the authenticated packets, with their plaintext payloads."""
    ok = np.array([q is not None for q in plain], dtype=bool)
    payloads = []
    for q in plain:
        if q is None:
            continue
        h = parse_rtp_header(q)  # after decryption, RFC 3550 §5.1 padding can be read
        payloads.append(q[h.payload_start:h.payload_end] if h is not None else b"")
    return RtpPackets(
        frame=p.frame[ok], arrival_ns=p.arrival_ns[ok], seq=p.seq[ok], seq_ext=p.seq_ext[ok],
        timestamp=p.timestamp[ok], ts_ext=p.ts_ext[ok], marker=p.marker[ok], payload_type=p.payload_type[ok],
        payloads=tuple(payloads),
    )


def decrypt_streams(
    capture: str | os.PathLike[str],
    streams: Sequence[RtpStream],
    *,
    keys: Sequence[SrtpKey | str] = (),
    missing: Literal["raise", "keep"] = "raise",
) -> list[RtpStream]:
    """Decrypt the SRTP streams among ``streams`` (found in ``capture``); the rest unchanged.

    A stream is decrypted when it is SRTP (:attr:`~qoe.rtp.RtpStream.srtp`) and a key
    authenticates its first packets: the sender's SDES key from the capture's SDP first,
    then ``keys`` in order. A stream not recognised as SRTP is tried with ``keys`` (when
    given) and decrypted if one authenticates it (``found_by="user"``). Each stream's
    datagrams are read again from the capture (SRTP authenticates the whole packet, the
    scan keeps payloads only) and decrypted in arrival order; the returned stream keeps
    its header-based statistics, and its packet table holds the authenticated packets
    with their plaintext payloads.

    Parameters
    ----------
    capture : path
        The capture the streams were found in (with ``keep_packets=True``).
    streams : sequence of RtpStream
        Streams of that capture.
    keys : sequence of SrtpKey or str, keyword-only
        Keys given by the user (``SUITE:BASE64``, :func:`parse_srtp_key`).
    missing : {"raise", "keep"}, keyword-only
        What to do with an SRTP stream no key decrypts: raise (default), or return it
        as it is (still encrypted: :attr:`SrtpInfo.decrypted` False).

    Returns
    -------
    list of RtpStream
        In the order given.

    Raises
    ------
    EncryptedStreamError
        An SRTP stream without a key that authenticates it (``missing="raise"``); the
        message names the capture and the stream and says what to pass.
    InputError, UnsupportedCodecError
        A bad key, or a suite that cannot be decrypted.

    Warns
    -----
    QoEWarning
        Some (not all) packets of a stream failed authentication: they count as lost.
    """
    from qoe.capture import capture_path  # noqa: PLC0415 - as read_udp_batches above

    name = capture_path(capture)
    user = [parse_srtp_key(k) for k in keys]
    todo = [s for s in streams if (s.srtp is not None and not s.srtp.decrypted) or (user and s.srtp is None)]
    if not todo:
        return list(streams)
    frames: set[int] = set()
    for s in todo:
        if s.packets is None or len(s.packets) == 0:
            raise InputError(f"{_stream_name(name, s)}: no packet table kept, cannot decrypt it")
        frames.update(s.packets.frame.tolist())
    data = _datagrams(name, frames)
    done: dict[int, RtpStream] = {}
    for s in todo:
        raw = [data.get(int(f), b"") for f in s.packets.frame.tolist()]  # type: ignore[union-attr]
        candidates: list[SrtpKey] = []
        sdp_problem = None
        if s.srtp is not None and s.srtp.sdes is not None:
            try:
                candidates.append(SrtpKey.from_sdes(s.srtp.sdes))
            except (InputError, UnsupportedCodecError) as e:
                sdp_problem = str(e)
        candidates += user
        key = next((k for k in candidates if _authenticates(raw, k)), None)
        if key is None:
            if s.srtp is None or missing == "keep":
                continue
            raise EncryptedStreamError(_no_key_message(name, s, candidates, sdp_problem))
        plain, failed, replayed = decrypt_packets(raw, key)
        if failed:
            warnings.warn(
                f"{_stream_name(name, s)}: {failed} of {len(raw)} SRTP packets failed authentication "
                f"(RFC 3711 §3.3); they count as lost", QoEWarning, stacklevel=2,
            )
        info = SrtpInfo(
            found_by=s.srtp.found_by if s.srtp is not None else "user",
            sdes=s.srtp.sdes if s.srtp is not None else None,
            decrypted=True, suite=key.suite, key_source=key.source, auth_failures=failed, replayed=replayed,
        )
        done[id(s)] = dataclasses.replace(s, packets=_plain_table(s.packets, plain), srtp=info)  # type: ignore[arg-type]
    return [done.get(id(s), s) for s in streams]


def _no_key_message(name: str, s: RtpStream, tried: list[SrtpKey], sdp_problem: str | None) -> str:
    how = "its SDP profile is RTP/SAVP" if s.srtp is not None and s.srtp.found_by == "sdp" else (
        "its payloads carry an SRTP authentication tag and look random")
    head = f"{_stream_name(name, s)} is SRTP-encrypted ({how})"
    if sdp_problem:
        return f"{head}, and its SDP key cannot be used: {sdp_problem}"
    if not tried:
        return (f"{head}, no key: pass srtp_keys=['SUITE:BASE64'] (CLI: --srtp-key "
                f"AES_CM_128_HMAC_SHA1_80:<base64 master key||salt>), or a capture with the call's SIP/SDP "
                f"(a=crypto)")
    return (f"{head}: none of the {len(tried)} key(s) tried ({', '.join(f'{k.suite} from {k.source}' for k in tried)}) "
            f"authenticates its packets: a wrong key, or a capture that starts after the sender's first "
            f"sequence-number rollover (RFC 3711 §3.3.1: the rollover counter is then unknown)")

