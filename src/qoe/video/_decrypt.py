"""SRTP video streams decrypted before they are rebuilt and decoded (RFC 3711).

A video stream is decrypted with the keys the user gives (``VideoOptions.srtp_keys``,
``--srtp-key SUITE:BASE64``) and the ``a=crypto`` keys (RFC 4568 SDES) of the SDP that
describes it (the capture's, or the one the user gives), by :func:`qoe.rtp.decrypt.decrypt_streams`
(libsrtp). A stream that is SRTP and that no key authenticates is not decoded: its facts come
from its RTP headers alone (:mod:`qoe.video.headers`), and a note says why.

References
----------
.. [1] RFC 3711, §3.1 (SRTP packet: the RTP header in clear, the payload encrypted).
.. [2] RFC 4568, §6.1 (SDES ``a=crypto``: suite and ``inline:`` master key || salt).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from qoe.rtp.decrypt import decrypt_streams
from qoe.rtp.srtp import SrtpKey, parse_srtp_key
from qoe.video.flows import VideoSource

__all__ = ["decrypt_source"]


def decrypt_source(capture: str, src: VideoSource, keys: Sequence[str]) -> tuple[VideoSource, str | None]:
    """``src`` with its RTP stream decrypted, or unchanged; and why it stays encrypted (None:
    it is plain RTP, or decrypted now)."""
    rtp = src.rtp
    if rtp is None:
        return src, None
    tried: list[SrtpKey] = [parse_srtp_key(k) for k in keys]
    if src.sdp is not None:
        tried += [SrtpKey.from_sdes(c) for c in getattr(src.sdp, "crypto", ())]
    if rtp.srtp is not None and rtp.srtp.decrypted:
        return src, None
    if not tried:
        if rtp.srtp is None:
            return src, None
        return src, ("SRTP (payloads encrypted) and no key: give srtp_keys (--srtp-key SUITE:BASE64) or the SDP "
                     "with its a=crypto line; the facts below come from the RTP headers only")
    (plain,) = decrypt_streams(capture, [rtp], keys=tried, missing="keep")
    info = plain.srtp
    if info is not None and info.decrypted:
        note = f"SRTP decrypted ({info.suite}, key from {'the SDP' if info.key_source == 'sdp' else 'srtp_keys'})"
        return dataclasses.replace(src, rtp=plain, notes=(*src.notes, note)), None
    if info is not None:
        return src, (f"SRTP (payloads encrypted) and none of the {len(tried)} key(s) given authenticates it; "
                     "the facts below come from the RTP headers only")
    return src, None
