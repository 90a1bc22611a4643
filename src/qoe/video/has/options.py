"""StreamingOptions: how adaptive streaming sessions are found, replayed and scored."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import ClassVar

from qoe.errors import InputError
from qoe.options import OptionsBase
from qoe.video.has.yin import PRESETS

__all__ = ["StreamingOptions", "DEFAULT_STARTUP_THRESHOLD_S", "DEFAULT_REBUFFER_THRESHOLD_S", "DEFAULT_VIDEO_UNDERFLOW_S"]

#: Media (s) the playable buffer must hold before playback starts. One 2 s segment of each
#: media type: what dash.js 5.2 and hls.js 1.7 needed on the sessions of data/video/has
#: (both started within 0.2 s of the first segment of every type completing; guide: streaming).
DEFAULT_STARTUP_THRESHOLD_S = 1.9
#: Media (s) the playable buffer must hold to resume after a stall (the same rule).
DEFAULT_REBUFFER_THRESHOLD_S = 1.9

#: Chromium's media pipeline keeps playing while the audio buffer has data and the video
#: buffer is empty (the picture freezes) for up to 3 s, then waits: every stall in the
#: dash.js and hls.js logs of data/video/has (Chromium 156) began when the audio buffer ran
#: dry or 3.0 s after the video buffer did.
DEFAULT_VIDEO_UNDERFLOW_S = 3.0

_RES = re.compile(r"^\d+x\d+$")


@dataclass(frozen=True)
class StreamingOptions(OptionsBase):
    """How :func:`qoe.video.has.sessions` replays and scores adaptive streaming sessions.

    Attributes
    ----------
    startup_threshold_s : float
        Media (s) the playable buffer holds when playback starts (default 1.9 s: about one
        2 s segment; see :data:`DEFAULT_STARTUP_THRESHOLD_S`).
    rebuffer_threshold_s : float
        Media (s) the buffer holds when playback resumes after a stall.
    video_underflow_s : float
        With separate audio and video: how long the video buffer may run dry while audio
        plays on before playback stops (default 3 s, :data:`DEFAULT_VIDEO_UNDERFLOW_S`; 0:
        playback needs every buffer, the strict MSE model).
    append_delay_s : float
        Time (s) from a segment's last byte until the player can play it (demux, transmux,
        append). Default 0; measured on data/video/has: dash.js (fMP4) 0.01-0.04 s, hls.js
        (MPEG-TS transmuxed in JavaScript) 0.1-0.2 s.
    qoe_preset : str
        The parameter set of the headline ``qoe`` column (:data:`qoe.video.has.yin.PRESETS`):
        ``pensieve-lin`` (default), ``pensieve-log``, ``pensieve-hd``, ``yin-balanced``,
        ``yin-avoid-instability``, ``yin-avoid-rebuffering``.
    smooth_penalty, rebuffer_penalty, startup_penalty : float, optional
        Override λ, μ, μ_s of that preset (the result says it was overridden).
    tick_s : float
        Step of the per-second table (default 1 s).
    p1203_device : {"pc", "mobile"}
        P.1203 I.GEN device type (written into the P.1203 input).
    p1203_display : str
        P.1203 I.GEN display resolution, ``WxH`` (default 1920x1080).
    manifests : tuple of str
        Manifest files of the presentation (an MPD; or an HLS master playlist and its media
        playlists) for sessions whose HTTP is encrypted: segments are then inferred from the
        sizes and timing of the TLS connections (:mod:`qoe.video.has._infer`), labelled inferred.
    opaque_ports : tuple of int
        Server ports whose connections are read by size for that inference even when they
        are not TLS (default 443; TLS connections are read on any port).
    infer_windows : bool
        With no manifest at all (none in the capture, none given): infer segments from the
        encrypted responses alone, each large response one segment of ``segment_duration_s``,
        its bitrate per segment-duration window (:func:`qoe.video.has._infer.window_requests`),
        labelled inferred. Off by default: every HTTPS capture has large responses that are
        not video.
    segment_duration_s : float, optional
        The segment duration for ``infer_windows``; None (default): estimated from the
        request periodicity (a player's steady state), else
        :data:`qoe.video.has._infer.DEFAULT_SEGMENT_DURATION_S` (2 s).
    keylog : str or tuple of str, optional
        NSS key log file(s) (``SSLKEYLOGFILE``) of the browser: HTTPS sessions (HTTP/1.1 over
        TLS, HTTP/2) are then rebuilt from the decrypted transactions
        (:func:`qoe.web.http.transactions`) and their manifests read from the decrypted
        streams (:mod:`qoe.video.has.decrypted`), as cleartext sessions are: not inferred.
        The same field as :attr:`qoe.web.WebOptions.keylog`; a pcapng capture's Decryption
        Secrets Blocks are used as well.
    """

    startup_threshold_s: float = DEFAULT_STARTUP_THRESHOLD_S
    rebuffer_threshold_s: float = DEFAULT_REBUFFER_THRESHOLD_S
    append_delay_s: float = 0.0
    video_underflow_s: float = DEFAULT_VIDEO_UNDERFLOW_S
    qoe_preset: str = "pensieve-lin"
    smooth_penalty: float | None = None
    rebuffer_penalty: float | None = None
    startup_penalty: float | None = None
    tick_s: float = 1.0
    p1203_device: str = "pc"
    p1203_display: str = "1920x1080"
    manifests: tuple[str, ...] = ()
    opaque_ports: tuple[int, ...] = (443,)
    infer_windows: bool = False
    segment_duration_s: float | None = None
    keylog: str | tuple[str, ...] | None = None

    KIND: ClassVar[str] = "streaming"

    def __post_init__(self) -> None:
        for name in ("startup_threshold_s", "rebuffer_threshold_s", "append_delay_s", "video_underflow_s"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise InputError(f"{name} must be a number of seconds ≥ 0; given {v!r}")
        if not (isinstance(self.tick_s, (int, float)) and math.isfinite(self.tick_s) and self.tick_s > 0):
            raise InputError(f"tick_s must be a positive number of seconds; given {self.tick_s!r}")
        if self.qoe_preset not in PRESETS:
            raise InputError(f"qoe_preset must be one of {', '.join(PRESETS)}; given {self.qoe_preset!r}")
        for name in ("smooth_penalty", "rebuffer_penalty", "startup_penalty"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise InputError(f"{name} must be a number ≥ 0 or None; given {v!r}")
        if self.p1203_device not in ("pc", "mobile"):
            raise InputError(f"p1203_device must be pc or mobile; given {self.p1203_device!r}")
        if isinstance(self.manifests, (str, bytes)) or not all(isinstance(m, str) for m in self.manifests):
            raise InputError(f"manifests must be a tuple of file paths; given {self.manifests!r}")
        object.__setattr__(self, "manifests", tuple(self.manifests))
        if not all(isinstance(p, int) and 0 < p < 65536 for p in self.opaque_ports):
            raise InputError(f"opaque_ports must be TCP port numbers; given {self.opaque_ports!r}")
        object.__setattr__(self, "opaque_ports", tuple(self.opaque_ports))
        if not isinstance(self.infer_windows, bool):
            raise InputError(f"infer_windows must be True or False; given {self.infer_windows!r}")
        d = self.segment_duration_s
        if d is not None and not (isinstance(d, (int, float)) and math.isfinite(d) and d > 0):
            raise InputError(f"segment_duration_s must be a positive number of seconds or None; given {d!r}")
        self._check_keylog()
        if not isinstance(self.p1203_display, str) or not _RES.match(self.p1203_display):
            raise InputError(f"p1203_display must be WIDTHxHEIGHT (e.g. 1920x1080); given {self.p1203_display!r}")

    def qoe_params(self):  # noqa: ANN201 - QoEParams, imported lazily
        """The QoE parameter set: the preset with the overrides given."""

        p = PRESETS[self.qoe_preset]
        changes = {k: float(getattr(self, k)) for k in ("smooth_penalty", "rebuffer_penalty", "startup_penalty")
                   if getattr(self, k) is not None}
        return p.replace(name=p.name + " (overridden)", **changes) if changes else p
