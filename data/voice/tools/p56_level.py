#!/usr/bin/env python3
"""Active speech level of a 16-bit mono WAV, ITU-T P.56 (12/2011) method B (stdlib only).

Used by ../make_samples.sh to bring the speech samples to -26 dBov. Written from the
Recommendation's description of method B (clause 6 / Annex B):

* envelope: two cascaded first-order smoothers of |x| with time constant 0.03 s;
* hangover 0.2 s; a set of thresholds c_j spaced 2:1 (6.02 dB) over the 16-bit range;
* for each threshold, activity a_j = samples whose envelope is >= c_j (plus hangover);
  A_j = 10 log10(sum x^2 / a_j);
* the active level is where A_j - 20 log10(c_j) equals the margin M = 15.9 dB
  (linear interpolation in dB between the two thresholds around it).

0 dBov is the level of a full-scale square wave, i.e. levels are 10 log10(mean x^2 / 32768^2).
No input filtering (the speech is synthetic, DC-free, band-limited by resampling).

Usage: p56_level.py FILE.wav [--target DBOV]
prints "level_dbov activity" or, with --target, the gain in dB that brings FILE to DBOV.
"""
import argparse
import array
import math
import sys
import wave

TIME_CONSTANT_S = 0.03  # P.56 (12/2011) method B: envelope time constant 0.03 s
HANGOVER_S = 0.2  # P.56 (12/2011) method B: hangover time 0.2 s
MARGIN_DB = 15.9  # P.56 (12/2011) method B: margin M = 15.9 dB
FULL_SCALE = 32768.0  # 16-bit overload point: 0 dBov


def read_wav(path):
    with wave.open(path, "rb") as w:
        if w.getsampwidth() != 2 or w.getnchannels() != 1:
            sys.exit(f"{path}: need 16-bit mono, got {8 * w.getsampwidth()}-bit x {w.getnchannels()}")
        rate = w.getframerate()
        data = array.array("h", w.readframes(w.getnframes()))
    if sys.byteorder == "big":
        data.byteswap()
    return rate, data


def active_level(rate, x):
    g = math.exp(-1.0 / (rate * TIME_CONSTANT_S))
    hang = int(round(HANGOVER_S * rate))
    thresholds = [2.0 ** j for j in range(0, 16)]  # 1 .. 2^15 (6.02 dB steps)
    nthr = len(thresholds)
    act = [0] * nthr
    cnt = [hang] * nthr  # samples since envelope last exceeded c_j (start "inactive")
    p = q = 0.0
    sq = 0.0
    for v in x:
        sq += float(v) * v
        p = g * p + (1.0 - g) * abs(v)
        q = g * q + (1.0 - g) * p
        for j in range(nthr):
            if q >= thresholds[j]:
                act[j] += 1
                cnt[j] = 0
            elif cnt[j] < hang:
                act[j] += 1
                cnt[j] += 1
            else:
                break  # q below c_j, hangover over: higher thresholds can only be inactive
    if sq == 0.0:
        raise SystemExit("silent file")
    # difference between active level A_j and threshold level C_j, in dB (counts, not dBov)
    diffs = []
    for j in range(nthr):
        if act[j] == 0:
            break
        a_db = 10 * math.log10(sq / act[j])
        c_db = 20 * math.log10(thresholds[j])
        diffs.append((a_db, c_db, a_db - c_db))
    level_db = None
    for j, (a_db, c_db, d) in enumerate(diffs):
        if d <= MARGIN_DB:
            if j == 0:
                level_db = a_db
            else:
                a0, c0, d0 = diffs[j - 1]
                frac = (d0 - MARGIN_DB) / (d0 - d)
                level_db = a0 + frac * (a_db - a0)
            break
    if level_db is None:
        level_db = diffs[-1][0]
    activity = sq / (10 ** (level_db / 10)) / len(x)
    return level_db - 20 * math.log10(FULL_SCALE), activity


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wav")
    ap.add_argument("--target", type=float, help="print gain (dB) to reach this level in dBov")
    a = ap.parse_args()
    rate, x = read_wav(a.wav)
    lev, activity = active_level(rate, x)
    if a.target is None:
        print(f"{lev:.2f} {activity:.3f}")
    else:
        print(f"{a.target - lev:.3f}")


if __name__ == "__main__":
    main()
