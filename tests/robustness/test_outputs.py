"""Outputs are written atomically and never over an input file (issue 13).

Each command that writes a file (``-o``) is run with the output path naming its own input:
it must refuse with one line and exit status 2, and the input must be unchanged.
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
from collections.abc import Callable
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


def _read_fifo(path: Path) -> tuple[list[bytes], Callable[[], bool]]:
    """What writers put through FIFO ``path``, read in a thread each time one opens it; and a
    ``stop()`` that lets the thread go (it may wait in ``open()`` for a writer) and says
    whether it ended."""
    got: list[bytes] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            with open(path, "rb") as fh:
                got.append(fh.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def stop() -> bool:
        done.set()
        for _ in range(600):  # a reader waiting in open() for a writer is let go
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # ENXIO: no reader has it open now
                pass
            reader.join(timeout=0.05)
            if not reader.is_alive():
                return True
        return False

    return got, stop


def test_an_output_that_is_not_a_regular_file_is_written_where_it_is(tmp_path):
    """``-o`` naming a device or a pipe (``/dev/null``, ``/dev/stdout``, a FIFO) writes into it:
    a rename over it would leave a regular file in its place (as root, ``-o /dev/null`` once
    replaced the system's /dev/null). A FIFO stands for the device here: the suite must not
    touch the machine's /dev/null."""
    fifo = tmp_path / "streams.csv"
    os.mkfifo(fifo)
    got, stop = _read_fifo(fifo)
    res = CliRunner().invoke(cli, ["streams", str(VOICE), "--format", "csv", "-o", str(fifo)])
    assert stop()
    assert res.exit_code == 0, res.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the pipe, not a file put in its place
    assert got and got[0].startswith(b"source,destination,src,sport,")  # the CSV went through the pipe
    assert sorted(p.name for p in tmp_path.iterdir()) == ["streams.csv"]  # no temporary file left


def test_written_in_place_tells_devices_and_pipes_from_files(tmp_path):
    from qoe.outputs import written_in_place

    assert written_in_place(os.devnull)  # a character device (only looked at: never written here)
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    assert written_in_place(fifo)
    plain = tmp_path / "f.csv"
    plain.write_text("x\n")
    assert not written_in_place(plain)
    assert not written_in_place(tmp_path / "absent.csv")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert not written_in_place(tmp_path / "dangling")


def test_an_output_through_a_symbolic_link_replaces_the_file_and_keeps_the_link(tmp_path):
    target = tmp_path / "real.csv"
    target.write_text("old\n")
    link = tmp_path / "latest.csv"
    link.symlink_to(target)
    res = CliRunner().invoke(cli, ["streams", str(VOICE), "--format", "csv", "-o", str(link)])
    assert res.exit_code == 0, res.output
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith("source,destination,src,sport,")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.csv", "real.csv"]


def test_a_batch_writes_its_results_into_a_pipe_where_it_is(tmp_path):
    """The batch results file named by a FIFO is written into (each time the sink writes it),
    never renamed over."""
    import qoe.batch

    cap = tmp_path / VOICE.name
    shutil.copy(VOICE, cap)
    manifest = tmp_path / "manifest.csv"
    manifest.write_text(f"capture,run\n{cap.name},1\n")
    fifo = tmp_path / "results.csv"
    os.mkfifo(fifo)
    got, stop = _read_fifo(fifo)  # each time the sink opens the pipe
    qoe.batch.run(manifest, workers=0, progress=False, output=fifo)
    assert stop()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    text = b"".join(got).decode()
    assert text.startswith("row,row_key,capture,") and cap.name in text


def test_a_batch_writes_its_results_through_a_symbolic_link(tmp_path):
    """The results file named by a symbolic link: the file it names is replaced, the link stays."""
    import qoe.batch

    cap = tmp_path / VOICE.name
    shutil.copy(VOICE, cap)
    manifest = tmp_path / "manifest.csv"
    manifest.write_text(f"capture,run\n{cap.name},1\n")
    target = tmp_path / "runs" / "results.csv"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "latest.csv"
    link.symlink_to(target)
    qoe.batch.run(manifest, workers=0, progress=False, output=link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith("row,row_key,capture,")
    assert sorted(p.name for p in target.parent.iterdir()) == ["results.csv"]  # no temporary file left


def test_an_output_that_names_a_folder_is_refused(tmp_path):
    """A folder is neither replaced nor written into: a clear InputError (the library's
    writers; the CLI's options already refuse one)."""
    from qoe.errors import InputError
    from qoe.outputs import atomic_output

    with pytest.raises(InputError, match="it is a folder"), atomic_output(tmp_path):
        pass
    assert tmp_path.is_dir() and list(tmp_path.iterdir()) == []
