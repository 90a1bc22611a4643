"""The one exception tree of :mod:`qoe`.

Every problem with what a user gave us (a file, an array, a parameter) is raised as a
subclass of :class:`QoEError`, with a message that names the input and says what was
wrong with it and, where it helps, what to do. Anything else escaping the library is a
bug.

::

    QoEError
    ├── InputError (also ValueError)       a parameter or array that cannot be used
    │   ├── NoSpeechError                  a speech signal with no active speech
    │   └── AlignmentError                 reference and degraded media cannot be aligned
    ├── CaptureError                       a capture file that cannot be read
    ├── UnsupportedCodecError              a payload type / codec qoe cannot decode
    ├── EncryptedStreamError               an SRTP stream without a key that decrypts it
    └── StreamNotFoundError                the requested stream is not in the capture

Recoverable problems (a truncated capture, an assumed delay) are reported with
:class:`QoEWarning` through :func:`warnings.warn`, never raised.
"""

from __future__ import annotations

__all__ = [
    "QoEError",
    "InputError",
    "NoSpeechError",
    "AlignmentError",
    "CaptureError",
    "UnsupportedCodecError",
    "EncryptedStreamError",
    "StreamNotFoundError",
    "QoEWarning",
]


class QoEError(Exception):
    """Base class of every error raised by :mod:`qoe` on bad input."""


class InputError(QoEError, ValueError):
    """A parameter, array or option that cannot be used as given."""


class NoSpeechError(InputError):
    """A speech signal in which no active speech (no utterance) was found."""


class AlignmentError(InputError):
    """Reference and degraded signals that cannot be put into correspondence."""


class CaptureError(QoEError):
    """A capture file that is not a capture, or uses a format qoe cannot read."""


class UnsupportedCodecError(QoEError):
    """A media payload type or codec that qoe cannot decode."""


class EncryptedStreamError(QoEError):
    """An encrypted (SRTP, RFC 3711) stream whose payload cannot be read: no key, or none
    that authenticates it. Header-based statistics do not need it; audio does."""


class StreamNotFoundError(QoEError, LookupError):
    """The stream asked for (by SSRC, port, ...) is not in the capture."""


class QoEWarning(UserWarning):
    """A recoverable problem: the result is still computed, with what was available."""
