"""``pesq()``: input checks, then the stages of P.862 in order."""

from __future__ import annotations

from typing import Literal

import numpy as np

from qoe.errors import InputError, NoSpeechError
from qoe.mos import raw_to_mos_lqo
from qoe.voice.p862 import _constants as C
from qoe.voice.p862._alignment import align
from qoe.voice.p862._constants import RateSetup, rate_setup
from qoe.voice.p862._filters import (
    alignment_copy,
    band_power,
    guarded,
    irs_receive,
    region_spectrum,
    wideband_input,
)
from qoe.voice.p862._perceptual import perceive
from qoe.voice.p862._result import PesqResult
from qoe.voice.p862._vad import envelope

__all__ = ["pesq"]

_RATES = (8000, 16000)  # P.862 clause 10.2.1.1 (8 kHz), P.862 Amd. / P.862.2 (16 kHz)
_INT16_FULL_SCALE = 32768.0


def _check_rate(fs: object, mode: object) -> int:
    if mode not in ("nb", "wb"):
        raise InputError(f"mode must be 'nb' (P.862) or 'wb' (P.862.2); given mode={mode!r}")
    if isinstance(fs, bool) or not isinstance(fs, (int, np.integer)) or int(fs) not in _RATES:
        raise InputError(
            f"PESQ works at 8000 or 16000 Hz only; given fs={fs!r}. "
            "Resample first, e.g. qoe.voice.load_speech(path, fs=16000), or qoe pesq --fs 16000"
        )
    if mode == "wb" and int(fs) != 16000:
        raise InputError(
            f"wide-band mode (P.862.2) needs fs=16000; given fs={fs} "
            "(score 8 kHz speech with mode='nb', or resample with load_speech(path, fs=16000))"
        )
    return int(fs)


def _check_signal(x: object, name: str, fs: int) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 1:
        what = "stereo/multi-channel" if arr.ndim == 2 else f"{arr.ndim}-D"
        raise InputError(f"{name} must be a 1-D mono signal; given a {what} array of shape {arr.shape}")
    if arr.dtype == np.int16:
        out = arr.astype(np.float64) / _INT16_FULL_SCALE
    elif np.issubdtype(arr.dtype, np.floating):
        out = arr.astype(np.float64)
    else:
        raise InputError(f"{name} must hold int16 or float samples; given dtype={arr.dtype}")
    bad = ~np.isfinite(out)
    if bad.any():
        raise InputError(
            f"{name} contains {int(bad.sum())} NaN or infinite samples (first at index {int(np.argmax(bad))})"
        )
    if out.size < C.MIN_SIGNAL_S * fs:
        raise InputError(
            f"{name} is {out.size / fs:.3f} s long; P.862 needs at least {C.MIN_SIGNAL_S} s "
            f"({int(C.MIN_SIGNAL_S * fs)} samples at {fs} Hz)"
        )
    return out


def _active_level_dbov(x: np.ndarray, vad: np.ndarray, setup: RateSetup) -> float:
    """Mean power of ``x`` over the 4 ms blocks marked as speech, in dB re full scale."""
    b, g = setup.block, setup.guard
    blocks = np.flatnonzero(vad > 0.0)
    pos = (blocks[:, None] * b + np.arange(b)).ravel() - g
    pos = pos[(pos >= 0) & (pos < x.size)]
    if pos.size == 0:
        return float("-inf")
    power = float(np.mean(x[pos] ** 2))
    return 10.0 * np.log10(power) if power > 0.0 else float("-inf")


def pesq(
    ref: np.ndarray,
    deg: np.ndarray,
    *,
    fs: int,
    mode: Literal["nb", "wb"] = "nb",
) -> PesqResult:
    """Perceptual speech quality of ``deg`` against ``ref``: ITU-T P.862 / P.862.2 (PESQ).

    Parameters
    ----------
    ref, deg : numpy.ndarray
        Reference and degraded speech, 1-D, int16 or float, same sample rate. Lengths may
        differ (variable delay, clock drift).
    fs : int
        Sample rate: 8000 or 16000 Hz. Nothing is resampled; see
        :func:`qoe.voice.load_speech` to read and resample files explicitly.
    mode : {"nb", "wb"}
        ``"nb"``: P.862 with the IRS receive filter (handset listening), score mapped by
        P.862.1; at 8 or 16 kHz. ``"wb"``: the P.862.2 wide-band extension (headphone
        listening), 16 kHz only, mapped by P.862.2.

    Returns
    -------
    PesqResult
        MOS-LQO, the raw score (nb), per-utterance delays, PESQ's view of the speech level
        of both signals and the per-frame disturbance profile.

    Raises
    ------
    InputError
        Unsupported ``fs`` or ``mode``; a signal that is not 1-D, not int16/float, holds
        NaN or infinity, or is shorter than 0.25 s.
    NoSpeechError
        A silent signal, or a reference in which no utterance (200 ms of speech that the
        degraded signal covers) is found.

    Notes
    -----
    Stages (clause numbers of P.862): level alignment of both signals to a fixed power of
    their 350-3250 Hz band (10.1.1); IRS receive filter (10.1.2) or the P.862.2 input
    filter; time alignment per utterance with envelope and fine alignment and utterance
    splitting (10.1.3); the perceptual model with Bark spectra, equalisation, gain
    compensation, Zwicker loudness, symmetric and asymmetric disturbance, realignment of
    bad intervals and Lp aggregation over 320 ms intervals and the file (10.2); the raw
    score 4.5 - 0.1 d_sym - 0.0309 d_asym (10.2.16).

    The Recommendation's reference C code takes precedence over its prose (P.862 clause 1);
    this implementation follows the behaviour of that code, including its boundary rules
    and its single-precision filters, and is checked against it
    (``benchmarks/pesq_vs_itu.py``, Annex A conformance data). One behaviour cannot be
    reproduced exactly: for utterances longer than about 3 s (6 s at 16 kHz) the reference's
    utterance-split search windows its frames partly with floating-point rounding noise
    (see ``_alignment.best_split``), so on such files a borderline split may be decided
    differently and the scores then differ.

    References
    ----------
    .. [1] ITU-T P.862 (02/2001), "Perceptual evaluation of speech quality (PESQ): an
       objective method for end-to-end speech quality assessment of narrow-band telephone
       networks and speech codecs", with Amendment 2 (11/2005).
    .. [2] ITU-T P.862.1 (11/2003), "Mapping function for transforming P.862 raw result
       scores to MOS-LQO".
    .. [3] ITU-T P.862.2 (11/2007), "Wideband extension to Recommendation P.862 for the
       assessment of wideband telephone networks and speech codecs".

    Examples
    --------
    >>> import numpy as np
    >>> from qoe.voice import pesq
    >>> t = np.arange(8000 * 4) / 8000
    >>> speech = np.sin(2 * np.pi * 440 * t) * (np.sin(2 * np.pi * 0.5 * t) > 0)
    >>> round(pesq(speech, speech, fs=8000).raw, 2)
    4.5
    """
    fs = _check_rate(fs, mode)
    x = _check_signal(ref, "ref", fs)
    y = _check_signal(deg, "deg", fs)
    setup = rate_setup(fs)
    n_ref, n_deg = x.size, y.size
    n_max = max(n_ref, n_deg)

    # 10.1.1: level alignment.
    ref_buf, deg_buf = guarded(x, setup), guarded(y, setup)
    ref_spec, deg_spec = region_spectrum(ref_buf, n_ref, setup), region_spectrum(deg_buf, n_deg, setup)
    p_ref = band_power(ref_spec, n_max, setup)
    p_deg = band_power(deg_spec, n_max, setup)
    if not p_ref > 0.0:
        raise NoSpeechError("ref is silent (no power in the 350-3250 Hz band); PESQ needs speech in the reference")
    if not p_deg > 0.0:
        raise NoSpeechError("deg is silent (no power in the 350-3250 Hz band); nothing to score")
    ref_scale, deg_scale = np.sqrt(C.TARGET_POWER / p_ref), np.sqrt(C.TARGET_POWER / p_deg)

    # 10.1.2 / P.862.2 clause 2: receive filtering.
    if mode == "nb":
        ref_buf, deg_buf = irs_receive(ref_spec, ref_scale, setup), irs_receive(deg_spec, deg_scale, setup)
    else:
        ref_buf = wideband_input(ref_buf * ref_scale, n_ref, setup)
        deg_buf = wideband_input(deg_buf * deg_scale, n_deg, setup)

    # 10.1.3: time alignment, on filtered copies.
    ref_al, deg_al = alignment_copy(ref_buf, n_ref, setup), alignment_copy(deg_buf, n_deg, setup)
    env_ref = envelope(ref_al, n_ref + 2 * setup.guard, setup.block)
    env_deg = envelope(deg_al, n_deg + 2 * setup.guard, setup.block)
    utts = align(ref_al, deg_al, env_ref, env_deg, n_deg, setup)
    if utts.start.size == 0:
        raise NoSpeechError(
            "no utterance found: the reference holds no 200 ms burst of speech that the "
            "degraded signal covers (P.862 clause 10.1.3.1)"
        )

    # 10.2: perceptual model on signals of equal length.
    total = n_max + 2 * setup.guard + setup.tail
    ref_model = np.zeros(total)
    ref_model[: ref_buf.size] = ref_buf
    deg_model = np.zeros(total)
    deg_model[: deg_buf.size] = deg_buf
    dist = perceive(ref_model, deg_model, utts, n_max, setup)

    mos = float(raw_to_mos_lqo(dist.raw, mode))  # P.862.1 / P.862.2
    hop = setup.hop
    frames = np.arange(dist.first_frame, dist.first_frame + dist.frame_sym.size)
    b, g = setup.block, setup.guard
    for arr in (dist.frame_sym, dist.frame_asym):
        arr.setflags(write=False)
    frame_time = frames * hop / fs
    frame_time.setflags(write=False)
    return PesqResult(
        mos_lqo=mos,
        raw=dist.raw if mode == "nb" else None,
        mode=mode,
        fs=fs,
        d_sym=dist.d_sym,
        d_asym=dist.d_asym,
        ref_level_dbov=_active_level_dbov(x, env_ref.vad, setup),
        deg_level_dbov=_active_level_dbov(y, env_deg.vad, setup),
        utterance_start_s=tuple(float((s * b - g) / fs) for s in utts.start),
        utterance_end_s=tuple(float((e * b - g) / fs) for e in utts.end),
        utterance_delay_ms=tuple(float(1000.0 * d / fs) for d in utts.delay),
        frame_time_s=frame_time,
        frame_disturbance=dist.frame_sym,
        frame_disturbance_asym=dist.frame_asym,
    )
