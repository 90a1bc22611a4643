"""Damaged inputs never break the contract: a result or a QoEError, never another exception.

Hypothesis draws the damage (tests/fuzz_targets.py: cut short, bytes flipped, inserted,
removed or repeated, a length field set to an extreme) applied to real samples from data/;
the longer campaign is ``python benchmarks/fuzz/run.py`` (and its atheris engine).
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_targets import TARGETS, check, mutate

# examples per target: the fast parsers get more, scoring a video (decoding) fewer
EXAMPLES = {"video-score": 8, "voice-score": 15, "speech-file": 15, "cli-score": 12, "web-keylog": 15}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_damaged_inputs_give_a_result_or_a_qoe_error(name):
    target = TARGETS[name]
    seeds = target.seed_bytes()
    if not seeds:
        pytest.skip(f"the samples of {name} are not in data/")

    @settings(max_examples=EXAMPLES.get(name, 30), deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(rnd=st.randoms(use_true_random=False), which=st.integers(0, len(seeds) - 1))
    def run(rnd: random.Random, which: int) -> None:
        data = mutate(seeds[which], rnd)
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / f"input{target.suffix}"
            path.write_bytes(data)
            exc = check(target, path)
        assert exc is None, f"{name}: {type(exc).__name__}: {exc}"

    run()


def test_the_mutations_damage_the_sample():
    """The inputs differ from the seed (else the test above proves nothing)."""
    seed = TARGETS["capture-packets"].seed_bytes()[0]
    rnd = random.Random(1)
    assert sum(mutate(seed, rnd) != seed for _ in range(50)) >= 45


def test_a_stream_announced_mid_file_ends_decoding_with_a_warning(tmp_path):
    """Found by the fuzz campaign: damaged MPEG-TS (the clip's first 160 KB, mutated with
    random.Random(1101)) announces a stream PyAV did not list at open, and PyAV's demuxer
    then raises IndexError on every packet. The frames before it are kept, with a warning."""
    from qoe.errors import QoEWarning
    from qoe.video import read_frames

    target = TARGETS["video-file"]
    seeds = target.seed_bytes()
    if not seeds:
        pytest.skip("data/video/reference/clip.ts not present")
    path = tmp_path / "damaged.ts"
    path.write_bytes(mutate(seeds[0], random.Random(1101)))
    with pytest.warns(QoEWarning, match="a stream appeared mid-file"):
        frames = list(read_frames(path))
    assert len(frames) > 0
