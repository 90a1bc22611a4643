"""PESQ: ITU-T P.862 perceptual speech quality, P.862.1 mapping, P.862.2 wide-band mode.

One module per stage of the Recommendation:

=====================  ===========================================================
``_constants``         every constant and table, tagged with its clause
``_filters``           level alignment (10.1.1), IRS / P.862.2 input filters (10.1.2),
                       the filtered copy used for alignment (10.1.3)
``_vad``               4 ms envelope and voice activity (10.1.3.1)
``_alignment``         crude, per-utterance, fine alignment and splitting (10.1.3)
``_perceptual``        the perceptual model and bad-interval realignment (10.2)
``_result``            :class:`PesqResult`
``_pesq``              :func:`pesq`: input checks and the stages in order
``_io``                :func:`load_speech` (files in, explicit resampling) and
                       :func:`pesq_files`
=====================  ===========================================================

References
----------
.. [1] ITU-T P.862 (02/2001) with Amendment 2 (11/2005).
.. [2] ITU-T P.862.1 (11/2003).
.. [3] ITU-T P.862.2 (11/2007).
"""

from __future__ import annotations

from qoe.voice.p862._io import load_speech, pesq_files
from qoe.voice.p862._pesq import pesq
from qoe.voice.p862._result import PesqResult

__all__ = ["pesq", "PesqResult", "load_speech", "pesq_files"]
