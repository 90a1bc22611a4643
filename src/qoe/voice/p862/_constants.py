"""Constants of ITU-T P.862 (PESQ) and P.862.2, grouped per stage and tagged with clauses.

P.862 (02/2001) describes the model in clause 10 and states (clause 1 and Annex A) that its
ANSI-C reference software is an integral part of the Recommendation and takes precedence
over the prose. Where the prose names a quantity without its value (the Bark band table,
the hearing threshold per band, the filter curves and the IIR sections), the value below is
the one published with that software (``pesqpar.h`` / ``pesqmain.h`` of the 2005 release,
"P.862 Annex A software"). They are facts of the standard, re-tabulated here per band and
per rate; no code was taken over.

References
----------
.. [1] ITU-T P.862 (02/2001), "Perceptual evaluation of speech quality (PESQ)", clause 10
   and Annex A (reference software, version 2.0, 10/2005).
.. [2] ITU-T P.862.2 (11/2007), "Wideband extension to Recommendation P.862", clause 2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RateSetup", "rate_setup"]

# --------------------------------------------------------------------------------------
# Signal framing shared by all stages (P.862 clause 10.1.3, Annex A software)
# --------------------------------------------------------------------------------------
ENVELOPE_MS = 4  # 10.1.3.1: the envelope (VAD) works on 4 ms blocks ("Downsample").
GUARD_BLOCKS = 75  # Annex A: 75 blocks (300 ms) of zeros around each signal ("SEARCHBUFFER").
TAIL_MS = 320  # Annex A: 320 ms of extra zeros after each signal ("DATAPADDING").
MIN_SIGNAL_S = 0.25  # Annex A: signals shorter than 1/4 s are refused.

# --------------------------------------------------------------------------------------
# Level alignment (P.862 clause 10.1.1)
# --------------------------------------------------------------------------------------
TARGET_POWER = 1.0e7  # 10.1.1: both signals are scaled to this mean power of the band-passed signal.
# 10.1.1: the power is measured after a band-pass (0 dB from 350 Hz to 3250 Hz, -500 dB
# elsewhere), given as (Hz, dB) points, linearly interpolated (Annex A "align_filter_dB").
LEVEL_FILTER_DB = (
    (0.0, -500.0), (50.0, -500.0), (100.0, -500.0), (125.0, -500.0), (160.0, -500.0),
    (200.0, -500.0), (250.0, -500.0), (300.0, -500.0), (350.0, 0.0), (400.0, 0.0),
    (500.0, 0.0), (600.0, 0.0), (630.0, 0.0), (800.0, 0.0), (1000.0, 0.0), (1250.0, 0.0),
    (1600.0, 0.0), (2000.0, 0.0), (2500.0, 0.0), (3000.0, 0.0), (3250.0, 0.0),
    (3500.0, -500.0), (4000.0, -500.0), (5000.0, -500.0), (6300.0, -500.0), (8000.0, -500.0),
)  # fmt: skip

# --------------------------------------------------------------------------------------
# Receive filtering (P.862 clause 10.1.2 and 10.2.2; P.862.2 clause 2)
# --------------------------------------------------------------------------------------
# 10.1.2: the IRS receive characteristic (P.830) as a piecewise-linear response in dB,
# applied by FFT over the whole file, normalised to 0 dB at 1 kHz (Annex A
# "standard_IRS_filter_dB").
IRS_RECEIVE_DB = (
    (0.0, -200.0), (50.0, -40.0), (100.0, -20.0), (125.0, -12.0), (160.0, -6.0),
    (200.0, 0.0), (250.0, 4.0), (300.0, 6.0), (350.0, 8.0), (400.0, 10.0), (500.0, 11.0),
    (600.0, 12.0), (700.0, 12.0), (800.0, 12.0), (1000.0, 12.0), (1300.0, 12.0),
    (1600.0, 12.0), (2000.0, 12.0), (2500.0, 12.0), (3000.0, 12.0), (3250.0, 12.0),
    (3500.0, 4.0), (4000.0, -200.0), (5000.0, -200.0), (6300.0, -200.0), (8000.0, -200.0),
)  # fmt: skip
GAIN_REFERENCE_HZ = 1000.0  # 10.1.2: both FFT filters are normalised to their gain at 1 kHz.

# P.862.2 clause 2: in wide-band mode the IRS receive filter is replaced by a flat response
# with a 100 Hz high-pass, one biquad (b0, b1, b2, a1, a2) per rate, applied after a
# 16-sample linear fade-in and fade-out of the signal (Annex A software of P.862.2).
WB_INPUT_SOS = {
    8000: ((2.6657628, -5.3315255, 2.6657628, -1.8890331, 0.89487434),),
    16000: ((2.740826, -5.4816519, 2.740826, -1.9444777, 0.94597794),),
}
WB_FADE_SAMPLES = 16

# 10.1.3: the time-alignment stages work on a copy filtered by a fixed IIR filter (second-
# order sections b0, b1, b2, a1, a2; Annex A "InIIR_Hsos"), after the DC is removed and the
# first and last 4 ms block are faded.
ALIGN_IIR_SOS = {
    8000: (
        (0.885535424, -0.885535424, 0.000000000, -0.771070709, 0.000000000),
        (0.895092588, 1.292907193, 0.449260174, 1.268869037, 0.442025372),
        (4.049527940, -7.865190042, 3.815662102, -1.746859852, 0.786305963),
        (0.500002353, -0.500002353, 0.000000000, 0.000000000, 0.000000000),
        (0.565002834, -0.241585934, -0.306009671, 0.259688659, 0.249979657),
        (2.115237288, 0.919935084, 1.141240051, -1.587313419, 0.665935315),
        (0.912224584, -0.224397719, -0.641121413, -0.246029464, -0.556720590),
        (0.444617727, -0.307589321, 0.141638062, -0.996391149, 0.502251622),
    ),
    16000: (
        (0.325631521, -0.086782860, -0.238848661, -1.079416490, 0.434583902),
        (0.403961804, -0.556985881, 0.153024077, -0.415115835, 0.696590244),
        (4.736162769, 3.287251046, 1.753289019, -1.859599046, 0.876284034),
        (0.365373469, 0.000000000, 0.000000000, -0.634626531, 0.000000000),
        (0.884811506, 0.000000000, 0.000000000, -0.256725271, 0.141536777),
        (0.723593055, -1.447186099, 0.723593044, -1.129587469, 0.657232737),
        (1.644910855, -1.817280902, 1.249658063, -1.778403899, 0.801724355),
        (0.633692689, -0.284644314, -0.319789663, 0.000000000, 0.000000000),
        (1.032763031, 0.268428979, 0.602913323, 0.000000000, 0.000000000),
        (1.001616361, -0.823749013, 0.439731942, -0.885778255, 0.000000000),
        (0.752472096, -0.375388990, 0.188977609, -0.077258216, 0.247230734),
        (1.023700575, 0.001661628, 0.521284240, -0.183867259, 0.354324187),
    ),
}

# --------------------------------------------------------------------------------------
# Time alignment (P.862 clause 10.1.3)
# --------------------------------------------------------------------------------------
VAD_ITERATIONS = 12  # 10.1.3.1: noise-floor threshold refined 12 times (mean + 2 std, x1.001).
VAD_THRESHOLD_MARGIN = 1.001
VAD_FLOOR = 1.0e-4  # block energies floored at 1e-4 of the loudest block.
VAD_MIN_BURST = 4  # bursts of at most 4 blocks (16 ms) are not speech.
VAD_MIN_BURST_RATIO = 3.0  # with a clean signal (SNR >= 30 dB), bursts below 3x threshold are dropped
VAD_CLEAN_SNR = 1000.0  # ... "clean" means speech power >= 1000x noise power
VAD_JOIN_GAP = 50  # gaps of at most 50 blocks (200 ms) between bursts are joined.
MIN_UTTERANCE_BLOCKS = 50  # 10.1.3.1: an utterance lasts at least 50 blocks (200 ms).
MAX_UTTERANCES = 50  # Annex A: at most 50 utterances after splitting.
SPLIT_MIN_BLOCKS = 200  # 10.1.3.3: utterances of at least 200 blocks (800 ms) are tried for a split.
SPLIT_MAX_POINTS = 40  # 10.1.3.3: at most 40 candidate split points per utterance.
SPLIT_MIN_PAD = 75  # ... kept at least max(75 blocks, 10 % of the speech) from the ends.
FINE_PEAK_FRACTION = 0.99  # 10.1.3.2: correlation lags within 1 % of the frame maximum vote
FINE_VOTE_POWER = 0.125  # ... with weight (peak)^0.125,
FINE_KERNEL_DIVISOR = 64  # ... votes smoothed by a triangle of half-width Nfft/64.

# --------------------------------------------------------------------------------------
# Perceptual model (P.862 clause 10.2)
# --------------------------------------------------------------------------------------
SILENCE_5_SAMPLES = 500.0  # 10.2.3: the active interval starts where 5 |samples| sum to >= 500.
# 10.2.5: the pitch power density is the FFT power summed per Bark band, times the band's
# correction factor and the power scaling factor Sp (10.2.1.3); 10.2.8: loudness scaling Sl
# (10.2.1.4). Sp depends on the FFT length, Sl does not.
SP = {8000: 2.764344e-5, 16000: 6.910853e-6}  # 10.2.1.3
SL = 1.866055e-1  # 10.2.1.4
SILENT_FRAME_POWER = 1.0e7  # 10.2.6: a reference frame is silent below this audible power
SILENT_FRAME_THRESHOLD_FACTOR = 100.0  # ... counting bands above 100x the hearing threshold.
EQ_CONSTANT = 1000.0  # 10.2.6: the per-band equalisation ratio uses +1000 in both terms,
EQ_LIMITS = (0.01, 100.0)  # ... limited to -20 dB .. +20 dB.
GAIN_CONSTANT = 5.0e3  # 10.2.7: frame gain ratio (audible power ref + 5e3)/(deg + 5e3),
GAIN_SMOOTHING = 0.2  # ... first-order smoothing with 0.2 of the previous value,
GAIN_LIMITS = (3.0e-4, 5.0)  # ... limited to this range.
ZWICKER_POWER = 0.23  # 10.2.8: Zwicker's loudness exponent, raised below 4 Bark:
LOW_BARK = 4.0  # gamma = 0.23 * min(6 / (z + 2), 2)^0.15 for z < 4 Bark.
DEADZONE = 0.25  # 10.2.9: differences smaller than 0.25 x min(loudness) are masked.
ASYM_CONSTANT = 50.0  # 10.2.10: asymmetry ratio ((deg + 50)/(ref + 50))^1.2,
ASYM_POWER = 1.2
ASYM_LOW, ASYM_HIGH = 3.0, 12.0  # ... set to 0 below 3 and limited to 12.
FRAME_POW_SYM = 2.0  # 10.2.11: Lp norm over frequency, p = 2 for the symmetric disturbance,
FRAME_POW_ASYM = 1.0  # ... p = 1 for the asymmetric disturbance.
SOFT_WEIGHT_OFFSET = 1.0e5  # 10.2.11: frames weighted by ((audible ref power + 1e5)/1e7)^0.04.
SOFT_WEIGHT_SCALE = 1.0e7
SOFT_WEIGHT_POWER = 0.04
FRAME_DISTURBANCE_MAX = 45.0  # 10.2.11: frame disturbances limited to 45.
BAD_FRAME_THRESHOLD = 30.0  # 10.2.13: frames with symmetric disturbance > 30 are "bad",
BAD_SMEAR = 2  # ... smeared over +-2 frames,
BAD_MIN_FRAMES = 5  # ... intervals of >= 5 frames are realigned,
BAD_SEARCH_FRAMES = 4  # ... searching +-4 FFT lengths,
BAD_MIN_CORRELATION = 0.5  # ... and kept only if the normalised correlation reaches 0.5.
SPLIT_SECOND_FRAMES = 20  # 10.2.14: 20 frames (320 ms) per interval, 50 % overlap,
SPLIT_SECOND_POW_SYM = 6.0  # ... L6 within an interval,
SPLIT_SECOND_POW_ASYM = 6.0
TIME_POW = 2.0  # 10.2.15: L2 over the intervals.
LONG_FILE_FRAMES = 1000  # 10.2.15: files longer than 1000 frames weight later frames more,
LONG_FILE_SLOPE_FRAMES = 5500.0  # ... factor (n - 1000)/5500, at most 0.5.
LONG_FILE_MAX_FACTOR = 0.5
SCORE_OFFSET = 4.5  # 10.2.16: PESQ = 4.5 - 0.1 d_sym - 0.0309 d_asym.
SCORE_SYM = 0.1
SCORE_ASYM = 0.0309

# 10.2.1 and 10.2.5: the Bark bands of the 16 kHz model, one row per band:
# (centre in Bark, width in Bark, FFT bins summed, power-density correction, absolute
# hearing threshold as a power density). The 8 kHz model uses the first 42 bands, the last
# of which is cut at 4 kHz (11 bins, correction 59.248363); see _BAND_8K_LAST below.
_BANDS_16K = (
    (0.078672, 0.157344, 1, 100.000000, 51286152.000000),  # 0
    (0.316341, 0.317994, 1, 99.999992, 2454709.500000),  # 1
    (0.636559, 0.322441, 1, 100.000000, 70794.593750),  # 2
    (0.961246, 0.326934, 1, 100.000008, 4897.788574),  # 3
    (1.290450, 0.331474, 1, 100.000008, 1174.897705),  # 4
    (1.624217, 0.336061, 1, 100.000015, 389.045166),  # 5
    (1.962597, 0.340697, 1, 99.999992, 104.712860),  # 6
    (2.305636, 0.345381, 1, 99.999969, 45.708820),  # 7
    (2.653383, 0.350114, 2, 50.000027, 17.782795),  # 8
    (3.005889, 0.354897, 1, 100.000000, 9.772372),  # 9
    (3.363201, 0.359729, 1, 99.999969, 4.897789),  # 10
    (3.725371, 0.364611, 1, 100.000015, 3.090296),  # 11
    (4.092449, 0.369544, 1, 99.999947, 1.905461),  # 12
    (4.464486, 0.374529, 1, 100.000061, 1.258925),  # 13
    (4.841533, 0.379565, 2, 53.047077, 0.977237),  # 14
    (5.223642, 0.384653, 1, 110.000046, 0.724436),  # 15
    (5.610866, 0.389794, 1, 117.991989, 0.562341),  # 16
    (6.003256, 0.394989, 2, 65.000000, 0.457088),  # 17
    (6.400869, 0.400236, 2, 68.760147, 0.389045),  # 18
    (6.803755, 0.405538, 2, 69.999931, 0.331131),  # 19
    (7.211971, 0.410894, 2, 71.428818, 0.295121),  # 20
    (7.625571, 0.416306, 2, 75.000038, 0.269153),  # 21
    (8.044611, 0.421773, 2, 76.843384, 0.257040),  # 22
    (8.469146, 0.427297, 2, 80.968781, 0.251189),  # 23
    (8.899232, 0.432877, 2, 88.646126, 0.251189),  # 24
    (9.334927, 0.438514, 3, 63.864388, 0.251189),  # 25
    (9.776288, 0.444209, 3, 68.155350, 0.251189),  # 26
    (10.223374, 0.449962, 3, 72.547775, 0.263027),  # 27
    (10.676242, 0.455774, 3, 75.584831, 0.288403),  # 28
    (11.134952, 0.461645, 4, 58.379192, 0.309030),  # 29
    (11.599563, 0.467577, 3, 80.950836, 0.338844),  # 30
    (12.070135, 0.473569, 4, 64.135651, 0.371535),  # 31
    (12.546731, 0.479621, 5, 54.384785, 0.398107),  # 32
    (13.029408, 0.485736, 4, 73.821884, 0.436516),  # 33
    (13.518232, 0.491912, 5, 64.437073, 0.467735),  # 34
    (14.013264, 0.498151, 6, 59.176456, 0.489779),  # 35
    (14.514566, 0.504454, 6, 65.521278, 0.501187),  # 36
    (15.022202, 0.510819, 7, 61.399822, 0.501187),  # 37
    (15.536238, 0.517250, 8, 58.144047, 0.512861),  # 38
    (16.056736, 0.523745, 9, 57.004543, 0.524807),  # 39
    (16.583761, 0.530308, 9, 64.126297, 0.524807),  # 40
    (17.117382, 0.536934, 12, 54.311001, 0.524807),  # 41
    (17.657663, 0.543629, 12, 61.114979, 0.512861),  # 42
    (18.204674, 0.550390, 15, 55.077751, 0.478630),  # 43
    (18.758478, 0.557220, 16, 56.849335, 0.426580),  # 44
    (19.319147, 0.564119, 18, 55.628868, 0.371535),  # 45
    (19.886751, 0.571085, 21, 53.137054, 0.363078),  # 46
    (20.461355, 0.578125, 25, 54.985844, 0.416869),  # 47
    (21.043034, 0.585232, 20, 79.546974, 0.537032),  # 48
)
_BAND_8K_LAST = (17.117382, 0.536934, 11, 59.248363, 0.524807)  # band 41 cut at 4 kHz


@dataclass(frozen=True)
class RateSetup:
    """Everything of the model that depends on the sample rate (8 or 16 kHz).

    Attributes
    ----------
    fs : int
        Sample rate in Hz.
    block : int
        Samples per 4 ms envelope block (10.1.3.1).
    align_nfft : int
        FFT length of the fine time alignment (10.1.3.2): 64 ms.
    frame : int
        FFT frame length of the perceptual model (10.2.1.1): 32 ms, hop ``frame // 2``.
    guard : int
        Zeros before (and, plus ``tail``, after) each signal: 75 blocks.
    tail : int
        Extra zeros after each signal: 320 ms.
    centre_bark, width_bark, bins, correction, threshold : numpy.ndarray
        The Bark band table (10.2.1, 10.2.5) restricted to this rate.
    """

    fs: int
    block: int
    align_nfft: int
    frame: int
    guard: int
    tail: int
    centre_bark: np.ndarray
    width_bark: np.ndarray
    bins: np.ndarray
    correction: np.ndarray
    threshold: np.ndarray

    @property
    def hop(self) -> int:
        """Perceptual-model frame hop: half a frame (10.2.4, 50 % overlap)."""
        return self.frame // 2

    @property
    def n_bands(self) -> int:
        """Number of Bark bands: 42 at 8 kHz, 49 at 16 kHz."""
        return int(self.bins.size)


def rate_setup(fs: int) -> RateSetup:
    """The :class:`RateSetup` of ``fs`` (8000 or 16000); the caller validates ``fs``."""
    rows = _BANDS_16K if fs == 16000 else _BANDS_16K[:41] + (_BAND_8K_LAST,)
    table = np.array(rows, dtype=np.float64)
    table.setflags(write=False)
    block = ENVELOPE_MS * fs // 1000
    return RateSetup(
        fs=fs,
        block=block,
        align_nfft=16 * block,  # 10.1.3.2: 64 ms (512 at 8 kHz, 1024 at 16 kHz)
        frame=8 * block,  # 10.2.1.1: 32 ms (256 at 8 kHz, 512 at 16 kHz)
        guard=GUARD_BLOCKS * block,
        tail=TAIL_MS * fs // 1000,
        centre_bark=table[:, 0],
        width_bark=table[:, 1],
        bins=np.asarray(table[:, 2], dtype=np.int64),
        correction=table[:, 3],
        threshold=table[:, 4],
    )
