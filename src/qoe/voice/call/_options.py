"""How the call scorer scores: one frozen, validated options object.

Import :class:`CallOptions` from :mod:`qoe.voice.call` (or :mod:`qoe.voice`).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import numbers
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, ClassVar, Literal, Union

from qoe.errors import InputError
from qoe.options import OptionsBase
from qoe.report import as_dict
from qoe.rtp.delay import Clocks
from qoe.rtp import STREAM_TIMEOUT_S
from qoe.rtp.jitterbuffer import JitterBuffer, parse_jitter_buffer
from qoe.rtp.srtp import parse_srtp_key
from qoe.voice import emodel
from qoe.voice.timeline import Conceal

__all__ = ["CallOptions", "DelayBasis"]

DelayBasis = Literal["conversation", "direction"]

# G.107 (06/2015) Table 3 inputs the scorer measures for each stream: the delays (clause 7.4,
# through the one-way delay convention of qoe.voice.emodel.r_factor) and the loss (clause 7.5).
_MEASURED = ("ta", "t", "tr", "ppl", "burst_r")
_DELAY_BASES = ("conversation", "direction")
_CONCEALS = ("repeat", "silence")
_CLOCKS = ("auto", "same", "different")


def _is_number(x: Any) -> bool:
    """A real number (NumPy's included), not a bool."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _frozen_params(params: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(params or {}))


@dataclass(frozen=True)
class CallOptions(OptionsBase):
    """Every choice the call scorer makes, with the defaults :func:`qoe.score` uses.

    All fields are checked when the object is made (an :class:`~qoe.errors.InputError`
    names the field and quotes the value), so a bad option fails before a capture is
    read. Make a variant with :func:`dataclasses.replace` or :meth:`replace`.

    Attributes
    ----------
    jitter_buffer : str or buffer
        The receiver's playout buffer to simulate: ``"adaptive"`` (default:
        :class:`~qoe.rtp.jitterbuffer.AdaptiveBuffer`, Ramjee et al. 1994),
        ``"fixed:<ms>"``, ``"none"``, or a buffer object.
    conceal : {"repeat", "silence"}
        Loss concealment of the rebuilt audio (default ``"repeat"``); also chooses the
        G.711 preset of the network-side score: ``"G.711-plc"`` for ``"repeat"``,
        ``"G.711"`` for ``"silence"`` (G.113 (11/2007) Appendix I).
    delay_basis : {"conversation", "direction"}
        The delay the delay impairment Id uses (default ``"conversation"``: the mean of
        both directions' mouth-to-ear delays; ``"direction"``: each direction's own).
    window_s : float
        Window of the network-side per-window scores, in s (default 10).
    codec : str or None
        A G.113 preset name (:data:`qoe.voice.emodel.CODECS`) overriding the one chosen
        from the payload type (default None: from the payload type).
    user : str or None
        The user's IP address: streams to it are "user listens", from it "user talks"
        (default None: the end of the first of two captures, else the SIP caller, else
        unknown).
    network_delay_ms : float or None
        Network one-way delay of the least-delayed packet, in ms, for streams whose delay
        is not measured from two captures (default None: RTCP round-trip time / 2, else
        assumed 0 ms with a :class:`~qoe.errors.QoEWarning`). Not the mouth-to-ear delay:
        packetisation, delay variation and the jitter buffer are added to it.
    clocks : {"auto", "same", "different"}
        Whether two captures share a clock (:func:`qoe.rtp.delay.one_way_delay`;
        default ``"auto"``).
    min_correlation : float
        Envelope correlation needed to locate a reference in a stream's audio
        (:func:`qoe.voice.locate.locate_reference`; default 0.4).
    emodel_params : mapping of str to float
        Other G.107 parameters for every E-model term, by their lower-case symbols (e.g.
        ``{"telr": 55}``; default none: G.107 (06/2015) Table 3 defaults). Not the
        delays and loss (``ta``, ``t``, ``tr``, ``ppl``, ``burst_r``): those are measured.
    srtp_keys : tuple of str
        SRTP keys as ``SUITE:BASE64`` (:func:`qoe.rtp.srtp.parse_srtp_key`; default none).
        SRTP streams are decrypted with their sender's SDES key from the capture's SDP,
        else with the first of these that authenticates them; one that no key decrypts
        makes :func:`qoe.score` raise :class:`~qoe.errors.EncryptedStreamError`. Shown as
        ``SUITE:***`` by :meth:`to_dict` (the key stays out of reports).
    stream_timeout_s : float
        A stream with no packet for this long has ended (default
        :data:`qoe.rtp.STREAM_TIMEOUT_S`, 25 s: RFC 3550 §6.3.5, 5 RTCP intervals of at
        least 5 s); so has one silent for 2 s after a SIP or RTCP BYE
        (:data:`qoe.rtp.BYE_GRACE_S`). ``qoe.score(kind="voice")`` on one capture scores
        each call once its streams have ended and releases them (memory follows the
        calls in progress, not the capture); a stream that resumes after the timeout is a
        second stream of its own (:func:`qoe.rtp.iter_scan`).

    Examples
    --------
    >>> CallOptions(jitter_buffer="fixed:60", network_delay_ms=40.0).delay_basis
    'conversation'
    >>> CallOptions(conceal="noise")
    Traceback (most recent call last):
    ...
    qoe.errors.InputError: conceal must be 'repeat' or 'silence'; given conceal='noise'
    """

    jitter_buffer: Union[str, JitterBuffer] = "adaptive"
    conceal: Conceal = "repeat"
    delay_basis: DelayBasis = "conversation"
    window_s: float = 10.0
    codec: str | None = None
    user: str | None = None
    network_delay_ms: float | None = None
    clocks: Clocks = "auto"
    min_correlation: float = 0.4
    emodel_params: Mapping[str, Any] = field(default_factory=dict)
    srtp_keys: tuple[str, ...] = ()
    stream_timeout_s: float = STREAM_TIMEOUT_S

    def __post_init__(self) -> None:
        parse_jitter_buffer(self.jitter_buffer)  # raises InputError naming the spec
        if self.conceal not in _CONCEALS:
            raise InputError(f"conceal must be 'repeat' or 'silence'; given conceal={self.conceal!r}")
        if self.delay_basis not in _DELAY_BASES:
            raise InputError(f"delay_basis must be 'conversation' or 'direction'; given delay_basis={self.delay_basis!r}")
        if self.clocks not in _CLOCKS:
            raise InputError(f"clocks must be 'auto', 'same' or 'different'; given clocks={self.clocks!r}")
        if not _is_number(self.window_s) or not self.window_s > 0:
            raise InputError(f"window_s must be a number of seconds > 0; given window_s={self.window_s!r}")
        d = self.network_delay_ms
        if d is not None and (not _is_number(d) or not (math.isfinite(d) and d >= 0)):
            raise InputError(f"network_delay_ms must be a finite number of ms >= 0; given network_delay_ms={d!r}")
        t = self.stream_timeout_s
        if not _is_number(t) or not (math.isfinite(t) and t > 0):
            raise InputError(f"stream_timeout_s must be a finite number of seconds > 0; given stream_timeout_s={t!r}")
        c = self.min_correlation
        if not _is_number(c) or not -1.0 <= c <= 1.0:
            raise InputError(f"min_correlation must be a correlation in [-1, 1]; given min_correlation={c!r}")
        if self.user is not None:
            try:
                ipaddress.ip_address(self.user)
            except ValueError:
                raise InputError(f"user must be an IP address (the user's end of the calls); given user={self.user!r}") from None
        if self.codec is not None:
            emodel.codec(self.codec)  # raises InputError listing the known presets
        params = _frozen_params(self.emodel_params)
        measured = sorted(set(params) & set(_MEASURED))
        if measured:
            raise InputError(
                f"emodel_params: {', '.join(measured)} are measured from the capture, not options "
                f"(the scorer sets {', '.join(_MEASURED)}); given emodel_params={dict(params)!r}"
            )
        if params:
            emodel.r_factor(**params)  # raises InputError on an unknown name or a bad value
        object.__setattr__(self, "emodel_params", params)
        keys = (self.srtp_keys,) if isinstance(self.srtp_keys, str) else tuple(self.srtp_keys)
        for k in keys:
            parse_srtp_key(k)  # raises InputError / UnsupportedCodecError naming the suite
        object.__setattr__(self, "srtp_keys", keys)

    KIND: ClassVar[str] = "call"

    @property
    def buffer(self) -> JitterBuffer:
        """Deprecated: ``parse_jitter_buffer(options.jitter_buffer)`` (issue 21: one name, ``jitter_buffer``)."""
        warnings.warn("CallOptions.buffer is deprecated: the option is CallOptions.jitter_buffer (parse it with "
                      "qoe.rtp.jitterbuffer.parse_jitter_buffer); the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return parse_jitter_buffer(self.jitter_buffer)

    def to_dict(self) -> dict[str, Any]:
        """The options as plain Python (the jitter buffer as its text form)."""
        out = as_dict(self)
        out["jitter_buffer"] = str(parse_jitter_buffer(self.jitter_buffer)) if not isinstance(self.jitter_buffer, str) else self.jitter_buffer
        out["srtp_keys"] = [f"{parse_srtp_key(k).suite}:***" for k in self.srtp_keys]
        return out
