"""Speech files in: reading with explicit (never silent) resampling, and PESQ of two files."""

from __future__ import annotations

from math import gcd
from os import PathLike
from typing import Literal

import numpy as np
import scipy.signal
import soundfile

from qoe.errors import InputError
from qoe.voice.p862._pesq import pesq
from qoe.voice.p862._result import PesqResult

__all__ = ["load_speech", "pesq_files"]


def load_speech(path: str | PathLike[str], fs: int | None = None) -> tuple[np.ndarray, int]:
    """Read a mono speech file as float64 samples in [-1, 1], resampling only when asked.

    Parameters
    ----------
    path : str or path-like
        Any file libsndfile reads (WAV, FLAC, AU, ...).
    fs : int, optional
        Sample rate wanted. When given and different from the file's rate, the signal is
        resampled with :func:`scipy.signal.resample_poly` (polyphase, Kaiser window) by the
        reduced ratio ``fs / rate``. When omitted the file's own rate is kept.

    Returns
    -------
    samples : numpy.ndarray
        1-D float64 signal.
    fs : int
        Its sample rate.

    Raises
    ------
    InputError
        The file cannot be read, has more than one channel, or ``fs`` is not a positive
        integer.

    References
    ----------
    .. [1] ITU-T P.862.3 (11/2007), clause 7: PESQ inputs are 8 or 16 kHz mono recordings.
    """
    if fs is not None and (isinstance(fs, bool) or not isinstance(fs, (int, np.integer)) or fs <= 0):
        raise InputError(f"fs must be a positive integer sample rate; given fs={fs!r}")
    try:
        data, rate = soundfile.read(path, dtype="float64", always_2d=True)
    except (RuntimeError, OSError, TypeError) as exc:
        raise InputError(f"cannot read speech file {str(path)!r}: {exc}") from exc
    if data.shape[1] != 1:
        raise InputError(
            f"{str(path)!r} has {data.shape[1]} channels; PESQ scores one mono channel, extract it first"
        )
    samples = data[:, 0]
    if fs is None or int(fs) == rate:
        return samples, int(rate)
    k = gcd(int(fs), int(rate))
    return scipy.signal.resample_poly(samples, int(fs) // k, int(rate) // k), int(fs)


def pesq_files(
    ref_path: str | PathLike[str],
    deg_path: str | PathLike[str],
    *,
    mode: Literal["nb", "wb"] = "nb",
    fs: int | None = None,
) -> PesqResult:
    """:func:`qoe.voice.pesq` of two speech files.

    Parameters
    ----------
    ref_path, deg_path : str or path-like
        Reference and degraded recordings, mono.
    mode : {"nb", "wb"}
        P.862 narrow-band or P.862.2 wide-band.
    fs : int, optional
        Resample both files to this rate first (see :func:`load_speech`). Without it both
        files must already share a rate of 8000 or 16000 Hz.

    Raises
    ------
    InputError
        A file that cannot be read or is not mono, files at different rates, or a rate
        PESQ does not support (with the option to resample named in the message).
    NoSpeechError
        See :func:`qoe.voice.pesq`.

    References
    ----------
    .. [1] ITU-T P.862 (02/2001); ITU-T P.862.2 (11/2007).
    """
    ref, ref_fs = load_speech(ref_path, fs)
    deg, deg_fs = load_speech(deg_path, fs)
    if ref_fs != deg_fs:
        raise InputError(
            f"{str(ref_path)!r} is sampled at {ref_fs} Hz but {str(deg_path)!r} at {deg_fs} Hz; "
            "give a sampling rate (fs=) to resample both"
        )
    try:
        return pesq(ref, deg, fs=ref_fs, mode=mode)
    except InputError as exc:
        raise type(exc)(f"{str(ref_path)!r} vs {str(deg_path)!r}: {exc}") from exc
