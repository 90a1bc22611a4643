"""Outputs are written atomically and never over an input file (issue 13).

Each command that writes a file (``-o``) is run with the output path naming its own input:
it must refuse with one line and exit status 2, and the input must be unchanged.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from qoe_cli.main import cli

DATA = Path(__file__).resolve().parents[2] / "data"
VOICE = DATA / "voice" / "field" / "dtmf.pcap"
WEB = DATA / "web" / "captures" / "http11-idle-b8-curl_client.pcap"
WAV = DATA / "voice" / "speech" / "de_male_8k.wav"


@pytest.mark.parametrize(("sample", "args"), [
    (VOICE, ["streams", "{in}", "-o", "{in}"]),
    (VOICE, ["score", "{in}", "--kind", "voice", "--format", "json", "-o", "{in}"]),
    (VOICE, ["extract", "{in}", "-o", "{in}"]),
    (WEB, ["web", "pages", "{in}", "-o", "{in}"]),
    (WEB, ["web", "har", "{in}", "-o", "{in}"]),
    (WAV, ["pesq", "{in}", "{in}", "-o", "{in}"]),
], ids=["streams", "score", "extract", "web-pages", "web-har", "pesq"])
def test_a_command_never_writes_over_its_input(tmp_path, sample, args):
    if not sample.is_file():
        pytest.skip(f"{sample} not present")
    src = tmp_path / sample.name
    shutil.copy(sample, src)
    before = src.read_bytes()
    res = CliRunner().invoke(cli, [a.replace("{in}", str(src)) for a in args])
    assert res.exit_code == 2, res.output
    assert "over an input" in res.output
    assert src.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [src.name]  # no temporary file left


def test_a_written_output_replaces_the_old_file_whole(tmp_path):
    out = tmp_path / "streams.csv"
    out.write_text("old content that is longer than nothing\n" * 1000)
    res = CliRunner().invoke(cli, ["streams", str(VOICE), "--format", "csv", "-o", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "old content" not in text and text.startswith(text.splitlines()[0])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["streams.csv"]


def test_a_batch_never_writes_its_results_over_the_manifest_or_a_capture(tmp_path):
    import qoe.batch
    from qoe.errors import InputError

    cap = tmp_path / VOICE.name
    shutil.copy(VOICE, cap)
    manifest = tmp_path / "manifest.csv"
    manifest.write_text(f"capture,run\n{cap.name},1\n")
    before = manifest.read_bytes(), cap.read_bytes()
    for out in (manifest, cap):
        with pytest.raises(InputError, match="over an input"):
            qoe.batch.run(manifest, workers=0, progress=False, output=out)
    assert (manifest.read_bytes(), cap.read_bytes()) == before
