"""Build the PESQ agreement corpus: espeak-ng speech through codecs, loss, noise, filters, delays.

Used by ``benchmarks/pesq_vs_itu.py`` (not a benchmark itself: the leading underscore keeps
``run_all.py`` from running it). Files go to a cache directory (``$QOE_CACHE`` or
``~/.cache/qoe``, subfolder ``pesq_corpus``), never into ``data/``; a manifest lists each
pair. Everything is deterministic: fixed texts, voices, seeds and tool versions.

Tools: ``espeak-ng`` (speech) and ``ffmpeg`` (codecs of Debian's build: G.711, G.722, G.726,
G.723.1, GSM, Speex, Opus, Codec 2, MP3, RealAudio 14.4). Conditions a codec cannot run at
a rate are produced at that codec's rate and resampled, as a gateway would.

Run alone to (re)build: ``python benchmarks/_pesq_corpus.py [--short] [--cache DIR]``.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from math import gcd
from pathlib import Path

import numpy as np
import scipy.signal
import soundfile

# Voices (espeak-ng language + variant) and what they say: three sentences each, spoken
# separately and joined with pauses, so that every file holds several utterances.
VOICES = {
    "en-us+m3": ("The birch canoe slid on the smooth planks.", "Glue the sheet to the dark blue background.",
                 "It is easy to tell the depth of a well."),
    "en-gb+f3": ("These days a chicken leg is a rare dish.", "Rice is often served in round bowls.",
                 "The juice of lemons makes fine punch."),
    "de+f2": ("Der Zug fährt heute pünktlich um acht Uhr ab.", "Im Sommer gehen wir oft am See spazieren.",
              "Bitte schließen Sie das Fenster im Flur."),
    "fr+m4": ("Le petit chat dort sur le canapé du salon.", "Nous partirons demain matin avant le lever du jour.",
              "La boulangerie ouvre à sept heures."),
    "es+f4": ("El tren de la mañana llega siempre con retraso.", "Mi hermana vive en una casa junto al mar.",
              "Por favor, cierra la puerta al salir."),
    "it+m2": ("Il museo resta aperto fino alle sette di sera.", "Domani andremo in montagna con gli amici.",
              "La pasta è pronta, venite a tavola."),
    "nl+f1": ("De fiets staat achter het huis in de schuur.", "Morgen gaan we met de trein naar Utrecht.",
              "Het regent al de hele dag."),
    "pt+m1": ("O comboio parte da estação às nove horas.", "A minha avó faz o melhor bolo da cidade.",
              "Fecha a janela, por favor."),
}
SECONDS = 8.0  # P.862.3 clause 7.1: 8-12 s files
LEVEL_DBOV = -26.0  # P.862.3 clause 7.4: active speech level about -26 dBov


@dataclass(frozen=True)
class Pair:
    ref: Path
    deg: Path
    fs: int
    voice: str
    condition: str
    category: str


def cache_dir(cache: str | None = None) -> Path:
    root = Path(cache or os.environ.get("QOE_CACHE") or Path.home() / ".cache" / "qoe")
    return root / "pesq_corpus"


def _resample(x: np.ndarray, fs_in: int, fs_out: int) -> np.ndarray:
    if fs_in == fs_out:
        return x
    k = gcd(fs_in, fs_out)
    return scipy.signal.resample_poly(x, fs_out // k, fs_in // k)


def _active_level(x: np.ndarray, fs: int) -> float:
    """RMS over 20 ms frames within 35 dB of the loudest (a simple stand-in for P.56)."""
    n = int(0.02 * fs)
    frames = x[: x.size // n * n].reshape(-1, n)
    energy = np.mean(frames**2, axis=1)
    active = energy > energy.max() * 10 ** (-35 / 10)
    return float(np.sqrt(energy[active].mean()))


def _speech(voice: str, fs: int, tmp: Path, seed: int) -> np.ndarray:
    """Three sentences of ``voice`` with 0.5-1.0 s pauses, SECONDS long, at -26 dBov."""
    rng = np.random.default_rng(seed)
    parts = [np.zeros(int(rng.uniform(0.3, 0.5) * fs))]
    for i, sentence in enumerate(VOICES[voice]):
        wav = tmp / f"s{i}.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", "150", "-w", str(wav), sentence], check=True)
        s, rate = soundfile.read(wav)
        s = _resample(s, rate, fs)
        nz = np.flatnonzero(np.abs(s) > 1e-4)
        parts += [s[nz[0] : nz[-1] + 1], np.zeros(int(rng.uniform(0.5, 1.0) * fs))]
    x = np.concatenate(parts)
    n = int(SECONDS * fs)
    x = x[:n] if x.size >= n else np.concatenate([x, np.zeros(n - x.size)])
    return x * (10 ** (LEVEL_DBOV / 20) / _active_level(x, fs))


def _ffmpeg(x: np.ndarray, fs: int, codec_rate: int, tmp: Path, encode: list[str], ext: str) -> np.ndarray:
    """Encode with ffmpeg at ``codec_rate`` and decode back to ``fs``."""
    src, coded, dec = tmp / "in.wav", tmp / f"coded.{ext}", tmp / "dec.wav"
    soundfile.write(src, np.clip(_resample(x, fs, codec_rate), -1, 1), codec_rate, subtype="PCM_16")
    run = ["ffmpeg", "-nostdin", "-y", "-loglevel", "error"]
    subprocess.run(run + ["-i", str(src), "-ac", "1", "-ar", str(codec_rate)] + encode + [str(coded)], check=True)
    subprocess.run(run + ["-i", str(coded), "-ac", "1", "-ar", str(codec_rate), "-c:a", "pcm_s16le", str(dec)],
                   check=True)
    y, rate = soundfile.read(dec)
    return _resample(y, rate, fs)


def _frame_loss(x: np.ndarray, fs: int, rate: float, seed: int, conceal: bool, burst: bool = False) -> np.ndarray:
    """Lose 20 ms packets: random (Bernoulli) or bursty (Gilbert, mean burst 3 packets).

    Without concealment a lost packet is silence; with it, the last good packet repeated at
    decreasing gain (a simple G.711 Appendix I-like PLC).
    """
    rng = np.random.default_rng(seed)
    n = int(0.02 * fs)
    y = x.copy()
    last, gain, lost = np.zeros(n), 1.0, False
    p_enter = rate / (3 * (1 - rate)) if burst else rate
    for start in range(0, x.size - n + 1, n):
        lost = (rng.random() < (2 / 3 if lost else p_enter)) if burst else (rng.random() < rate)
        if lost:
            gain = gain * 0.5 if conceal else 0.0
            y[start : start + n] = gain * last if conceal else 0.0
        else:
            last, gain = x[start : start + n], 1.0
    return y


def _pink(n: int, rng: np.random.Generator) -> np.ndarray:
    spec = np.fft.rfft(rng.standard_normal(n))
    spec[1:] /= np.sqrt(np.arange(1, spec.size))
    return np.fft.irfft(spec, n)


def _noise(x: np.ndarray, fs: int, snr_db: float, kind: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(x.size) if kind == "white" else _pink(x.size, rng)
    level = _active_level(x, fs) / 10 ** (snr_db / 20)
    return x + noise * (level / np.sqrt(np.mean(noise**2)))


def _filter(x: np.ndarray, fs: int, kind: str, *freqs: float) -> np.ndarray:
    sos = scipy.signal.butter(6, [f / (fs / 2) for f in freqs] if len(freqs) > 1 else freqs[0] / (fs / 2),
                              kind, output="sos")
    return scipy.signal.sosfilt(sos, x)


def _pauses(x: np.ndarray, fs: int) -> list[int]:
    """Sample positions in the middle of the pauses between sentences."""
    n = int(0.02 * fs)
    quiet = np.mean(x[: x.size // n * n].reshape(-1, n) ** 2, axis=1) < 1e-7
    edges = np.diff(np.concatenate([[0], quiet.astype(int), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    inner = (starts > 0) & (ends < quiet.size) & (ends > starts + 5)  # pauses between sentences
    return [int((s + e) // 2 * n) for s, e in zip(starts[inner], ends[inner])]


def _delay_changes(x: np.ndarray, fs: int, steps_ms: list[float]) -> np.ndarray:
    """Change the delay by each step in successive pauses (positive: insert, negative: cut)."""
    out, prev = [], 0
    for pos, step in zip(_pauses(x, fs), steps_ms):
        out.append(x[prev:pos])
        k = int(abs(step) * fs / 1000)
        if step > 0:
            out.append(np.zeros(k))
            prev = pos
        else:
            prev = pos + k
    out.append(x[prev:])
    return np.concatenate(out)


def _conditions(fs: int) -> dict[str, tuple[str, object]]:
    """name -> (category, function(x, tmp) -> degraded)."""
    nb = 8000
    c: dict[str, tuple[str, object]] = {
        "clean": ("reference", lambda x, t: x.copy()),
        "g711u": ("G.711", lambda x, t: _ffmpeg(x, fs, nb, t, ["-c:a", "pcm_mulaw"], "wav")),
        "g711a": ("G.711", lambda x, t: _ffmpeg(x, fs, nb, t, ["-c:a", "pcm_alaw"], "wav")),
        "g726_16": ("codec", lambda x, t: _ffmpeg(x, fs, nb, t, ["-c:a", "g726", "-b:a", "16k"], "wav")),
        "g726_32": ("codec", lambda x, t: _ffmpeg(x, fs, nb, t, ["-c:a", "g726", "-b:a", "32k"], "wav")),
        "gsm_fr": ("codec", lambda x, t: _ffmpeg(x, fs, nb, t, ["-c:a", "libgsm"], "gsm")),
        "g723_1": ("codec", lambda x, t: _ffmpeg(x, fs, nb, t, ["-c:a", "g723_1", "-b:a", "6300"], "wav")),
        "codec2_3200": ("codec", lambda x, t: _ffmpeg(x, fs, nb, t, ["-c:a", "libcodec2", "-mode", "3200"], "c2")),
        "codec2_1200": ("codec", lambda x, t: _ffmpeg(x, fs, nb, t, ["-c:a", "libcodec2", "-mode", "1200"], "c2")),
        "speex_8k": ("codec", lambda x, t: _ffmpeg(x, fs, nb, t, ["-c:a", "libspeex", "-b:a", "8k"], "ogg")),
        "opus_8k": ("codec", lambda x, t: _ffmpeg(x, fs, 16000, t, ["-c:a", "libopus", "-b:a", "8k"], "ogg")),
        "opus_16k": ("codec", lambda x, t: _ffmpeg(x, fs, 16000, t, ["-c:a", "libopus", "-b:a", "16k"], "ogg")),
        "g722": ("codec", lambda x, t: _ffmpeg(x, fs, 16000, t, ["-c:a", "g722"], "wav")),
        "mp3_16k": ("codec", lambda x, t: _ffmpeg(x, fs, nb, t, ["-c:a", "libmp3lame", "-b:a", "16k"], "mp3")),
        "ra144": ("codec", lambda x, t: _ffmpeg(x, fs, nb, t, ["-c:a", "real_144"], "rm")),
        "loss3": ("loss", lambda x, t: _frame_loss(x, fs, 0.03, 1, False)),
        "loss10": ("loss", lambda x, t: _frame_loss(x, fs, 0.10, 2, False)),
        "loss20": ("loss", lambda x, t: _frame_loss(x, fs, 0.20, 3, False)),
        "loss3_plc": ("loss+PLC", lambda x, t: _frame_loss(x, fs, 0.03, 1, True)),
        "loss10_plc": ("loss+PLC", lambda x, t: _frame_loss(x, fs, 0.10, 2, True)),
        "burst10_plc": ("loss+PLC", lambda x, t: _frame_loss(x, fs, 0.10, 4, True, burst=True)),
        "burst10": ("loss", lambda x, t: _frame_loss(x, fs, 0.10, 4, False, burst=True)),
        "g711_loss5_plc": ("loss+PLC", lambda x, t: _frame_loss(
            _ffmpeg(x, fs, nb, t, ["-c:a", "pcm_alaw"], "wav"), fs, 0.05, 5, True)),
        "white30": ("noise", lambda x, t: _noise(x, fs, 30, "white", 11)),
        "white15": ("noise", lambda x, t: _noise(x, fs, 15, "white", 12)),
        "pink20": ("noise", lambda x, t: _noise(x, fs, 20, "pink", 13)),
        "pink5": ("noise", lambda x, t: _noise(x, fs, 5, "pink", 14)),
        "lp2500": ("band limit", lambda x, t: _filter(x, fs, "lowpass", 2500)),
        "lp1200": ("band limit", lambda x, t: _filter(x, fs, "lowpass", 1200)),
        "hp500": ("band limit", lambda x, t: _filter(x, fs, "highpass", 500)),
        "bp500_2500": ("band limit", lambda x, t: _filter(x, fs, "bandpass", 500, 2500)),
        "gain_m20": ("level", lambda x, t: 0.1 * x),
        "gain_p20_clip": ("clipping", lambda x, t: np.clip(10 * x, -1, 1)),
        "clip_005": ("clipping", lambda x, t: np.clip(x, -0.05, 0.05)),
        "gain_wobble": ("level", lambda x, t: x * 10 ** (6 / 20 * np.sin(2 * np.pi * 0.4 * np.arange(x.size) / fs))),
        "delay_60ms": ("constant delay", lambda x, t: np.concatenate([np.zeros(int(0.06 * fs)), x])),
        "delay_400ms": ("constant delay", lambda x, t: np.concatenate([np.zeros(int(0.4 * fs)), x])[: x.size]),
        "advance_100ms": ("constant delay", lambda x, t: x[int(0.1 * fs):]),
        "jumps_up": ("variable delay", lambda x, t: _delay_changes(x, fs, [40, 80])),
        "jumps_mixed": ("variable delay", lambda x, t: _delay_changes(x, fs, [60, -30])),
        "jumps_down": ("variable delay", lambda x, t: _delay_changes(
            np.concatenate([np.zeros(int(0.1 * fs)), x]), fs, [-40, -40])),
        "gsm_jumps_loss": ("variable delay", lambda x, t: _frame_loss(
            _delay_changes(_ffmpeg(x, fs, nb, t, ["-c:a", "libgsm"], "gsm"), fs, [20, 30]), fs, 0.03, 6, True)),
    }
    if fs == 16000:
        c["speex_wb"] = ("codec", lambda x, t: _ffmpeg(x, fs, 16000, t, ["-c:a", "libspeex", "-b:a", "16k"], "ogg"))
        c["lp3400"] = ("band limit", lambda x, t: _filter(x, fs, "lowpass", 3400))
        c["lp7000"] = ("band limit", lambda x, t: _filter(x, fs, "lowpass", 7000))
    return c


SHORT_CONDITIONS = ("clean", "g711u", "gsm_fr", "opus_8k", "loss10", "loss10_plc", "pink20", "lp2500",
                    "clip_005", "delay_400ms", "jumps_mixed")


def build(cache: str | None = None, *, short: bool = False, rates: tuple[int, ...] = (8000, 16000)) -> list[Pair]:
    """Make (or reuse) the corpus and return its pairs."""
    for tool in ("espeak-ng", "ffmpeg"):
        if shutil.which(tool) is None:
            raise FileNotFoundError(f"{tool} is needed to build the PESQ corpus (apt-get install {tool})")
    root = cache_dir(cache)
    voices = list(VOICES)[:2] if short else list(VOICES)
    pairs: list[Pair] = []
    with tempfile.TemporaryDirectory() as tmpname:
        tmp = Path(tmpname)
        for fs in rates:
            conds = _conditions(fs)
            names = [n for n in conds if n in SHORT_CONDITIONS] if short else list(conds)
            for vi, voice in enumerate(voices):
                folder = root / f"{fs}" / voice.replace("+", "_")
                folder.mkdir(parents=True, exist_ok=True)
                ref_path = folder / "ref.wav"
                ref = None
                if not ref_path.exists():
                    soundfile.write(ref_path, _speech(voice, fs, tmp, seed=vi), fs, subtype="PCM_16")
                for name in names:
                    category, fn = conds[name]
                    deg_path = folder / f"{name}.wav"
                    if not deg_path.exists():
                        if ref is None:
                            ref, _ = soundfile.read(ref_path)
                        deg = np.clip(fn(ref, tmp), -1.0, 32767 / 32768)
                        soundfile.write(deg_path, deg, fs, subtype="PCM_16")
                    pairs.append(Pair(ref_path, deg_path, fs, voice, name, category))
    with open(root / "manifest.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["ref", "deg", "fs", "voice", "condition", "category"])
        for p in pairs:
            w.writerow([p.ref, p.deg, p.fs, p.voice, p.condition, p.category])
    return pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--cache", default=None)
    args = ap.parse_args()
    pairs = build(args.cache, short=args.short)
    print(f"{len(pairs)} pairs in {cache_dir(args.cache)}")


if __name__ == "__main__":
    main()
