"""Reading speech files for PESQ, with explicit (never silent) resampling."""

from __future__ import annotations

from math import gcd
from os import PathLike

import numpy as np
import scipy.signal
import soundfile

from qoe.errors import InputError

__all__ = ["load_speech"]


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
