"""qoe.batch.run and ``qoe batch``: manifests, labels, errors, resume, output files, pool and Dask.

The batch only orchestrates :func:`qoe.score`: the reference for every scored value here is
:func:`qoe.score` called directly on the same row (its own tests check the scores against
the standards and tshark/ffmpeg). Rows use the quick bundled samples (voice without a
reference, web, video without a reference: well under a second each).
"""

from __future__ import annotations

import math
import os
import shutil
import threading
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import qoe
import qoe.batch
from qoe.errors import CaptureError, InputError, QoEWarning
from qoe.voice import CallOptions

DATA = Path(__file__).resolve().parents[1] / "data"
VOICE = DATA / "voice" / "captures" / "up-b64_client.pcap"
VOICE_SERVER = DATA / "voice" / "captures" / "up-b64_server.pcap"
WEB = DATA / "web" / "captures" / "http11-up-b8-wget_client.pcap"
VIDEO = DATA / "video" / "captures" / "h264-down-b8_client.pcap"
pytestmark = pytest.mark.skipif(not all(p.is_file() for p in (VOICE, VOICE_SERVER, WEB, VIDEO)),
                                reason="bundled samples not present")


def _manifest() -> list[dict]:
    return [
        {"capture": str(VOICE), "buffer": 64, "workload": "up", "run": 1},
        {"capture": str(WEB), "kind": "web", "buffer": 8, "workload": "up", "run": 1},
        {"capture": str(VIDEO), "kind": "video", "buffer": 8, "workload": "down", "run": 1},
    ]


def _direct(row: dict) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        return qoe.score(row["capture"], kind=row.get("kind", "auto"), reference=row.get("reference"),
                         sender_capture=row.get("sender_capture"),
                         **{k: row[k] for k in ("jitter_buffer", "window_s") if k in row}).to_frame()


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return a == b


def _check_against_score(df: pd.DataFrame, manifest: list[dict]) -> None:
    """Each manifest row's results are qoe.score's records of that row, with the row's labels."""
    assert sorted(df["row"].unique()) == list(range(len(manifest)))
    for i, row in enumerate(manifest):
        got = df[df["row"] == i].reset_index(drop=True)
        want = _direct(row)
        assert len(got) == len(want) > 0, (i, len(got), len(want))
        assert got["error"].isna().all()
        for col in ("stream", "url", "mos", "mos_network", "plt_s", "frames_decoded", "packets_lost"):
            if col in want.columns:
                assert all(_same(a, b) for a, b in zip(got[col], want[col])), (i, col)
        # the records' kind column is renamed when the manifest has a kind column
        assert list(got["result_kind" if "result_kind" in df.columns else "kind"]) == list(want["kind"])
        for label in ("buffer", "workload", "run"):
            assert (got[label] == row[label]).all(), (i, label)


def test_list_of_dicts_gives_qoe_scores_records_with_the_labels():
    manifest = _manifest()
    df = qoe.batch.run(manifest, workers=0, progress=False)
    _check_against_score(df, manifest)
    # one row per call direction (2), page load (1) and video stream (1)
    assert list(df.groupby("row").size()) == [2, 1, 1]
    # issue 21: the video results' jitter buffer is `jitter_buffer`, not the `buffer` label
    assert "result_buffer" not in df.columns and df.loc[df["row"] == 2, "jitter_buffer"].tolist() == ["none"]
    assert list(df.columns[:2]) == ["row", "row_key"]
    assert df["row_key"].tolist() == [qoe.batch.row_key(manifest[i]) for i in df["row"]]


def test_a_dataframe_and_a_csv_file_with_relative_paths_give_the_same(tmp_path):
    manifest = _manifest()
    from_frame = qoe.batch.run(pd.DataFrame(manifest), workers=0, progress=False)
    # the CSV holds paths relative to its own folder, and is read from elsewhere
    folder = tmp_path / "study"
    folder.mkdir()
    rel = [{**r, "capture": os.path.relpath(r["capture"], folder)} for r in manifest]
    pd.DataFrame(rel).to_csv(folder / "runs.csv", index=False)
    from_csv = qoe.batch.run(folder / "runs.csv", workers=0, progress=False)
    for col in ("row", "buffer", "workload", "mos", "stream", "plt_s"):
        assert all(_same(a, b) for a, b in zip(from_frame[col], from_csv[col])), col
    assert from_csv["error"].isna().all()
    assert from_csv["capture"].tolist()[0] == rel[0]["capture"]  # the manifest's cells, as given


def test_options_by_name_and_by_kind_reach_the_scorer():
    row = {"capture": str(VOICE), "sender_capture": str(VOICE_SERVER), "window_s": 5.0,
           "voice.jitter_buffer": "fixed:20"}
    df = qoe.batch.run([row, {**row, "voice.jitter_buffer": "none", "video.jitter_buffer": "fixed:50"}], workers=0,
                       progress=False)
    want = _direct({**row, "kind": "voice", "jitter_buffer": "fixed:20"})
    got = df[df["row"] == 0]
    assert got["late_lost"].tolist() == want["late_lost"].tolist()
    assert got["mos_network"].tolist() == want["mos_network"].tolist()
    assert got["jitter_buffer"].tolist() == want["jitter_buffer"].tolist() == ["fixed:20", "fixed:20"]
    assert df[df["row"] == 1]["error"].isna().all()
    # a bare column two kinds share is ambiguous: the manifest says which spellings to use
    with pytest.raises(InputError, match="column 'jitter_buffer' is an option of voice and video: name it "
                                         "voice.jitter_buffer or video.jitter_buffer"):
        qoe.batch.run([{"capture": str(VOICE), "jitter_buffer": "none"}], workers=0, progress=False)


BROWSER = DATA / "web" / "browser" / "captures"


@pytest.mark.skipif(not (BROWSER / "h2-idle.pcap").is_file(), reason="data/web/browser not present")
def test_a_bare_key_column_goes_to_every_kind_that_takes_keys(tmp_path):
    """A ``keylog`` column names the same secrets for web and streaming (qoe.api.SHARED_OPTIONS):
    it reaches both, as qoe.score(keylog=...) and qoe score --keylog do; the page is decrypted
    (41 objects, the browser's HAR entries; 3 without keys, the connections that carried data:
    data/web/browser/measured.md). Naming it again for one kind
    is the same option twice."""
    cap, keys = BROWSER / "h2-idle.pcap", BROWSER / "h2-idle.keylog"
    df = qoe.batch.run([{"capture": str(cap), "keylog": str(keys), "run": 1}, {"capture": str(cap), "run": 2}],
                       workers=0, progress=False)
    assert df["error"].isna().all()
    assert df.sort_values("row")["objects"].tolist() == [41, 3]
    with pytest.raises(InputError, match="columns 'keylog' and 'web.keylog' are the same option: keep one"):
        qoe.batch.run([{"capture": str(cap), "keylog": str(keys), "web.keylog": str(keys)}], workers=0, progress=False)


def test_a_label_named_like_a_result_column_keeps_its_value():
    df = qoe.batch.run([{"capture": str(VOICE), "direction": "up"}], workers=0, progress=False)
    assert (df["direction"] == "up").all()
    assert df["result_direction"].tolist() == _direct({"capture": str(VOICE)})["direction"].tolist()


def test_a_bad_row_gets_its_error_and_the_batch_goes_on(tmp_path):
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"this is not a capture at all")
    missing = tmp_path / "missing.pcap"
    manifest = [
        {"capture": str(missing), "run": 1},
        {"capture": str(VOICE), "run": 2},
        {"capture": str(junk), "run": 3},
        {"capture": str(VOICE), "voice.jitter_buffer": "sometimes", "run": 4},
        {"capture": str(WEB), "kind": "voice", "run": 5},
    ]
    df = qoe.batch.run(manifest, workers=0, progress=False)
    errors = df.drop_duplicates("row").set_index("row")["error"]
    for i in (0, 2, 3, 4):
        row = manifest[i]
        with pytest.raises(qoe.QoEError) as exc:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", QoEWarning)
                qoe.score(row["capture"], kind=row.get("kind", "auto"),
                          **({"options": CallOptions(jitter_buffer=row["voice.jitter_buffer"])}
                             if "voice.jitter_buffer" in row else {}))
        assert errors[i] == str(exc.value), i
    assert isinstance(errors[0], str) and "no such capture file" in errors[0]
    assert pd.isna(errors[1]) and len(df[df["row"] == 1]) == 2  # the good row is scored
    assert (df[df["row"] == 0]["run"] == 1).all()  # a failed row keeps its labels


def test_bad_manifests_and_arguments_raise_before_scoring(tmp_path):
    with pytest.raises(InputError, match="no 'capture' column"):
        qoe.batch.run([{"file": str(VOICE)}], workers=0, progress=False)
    with pytest.raises(InputError, match="video has no option 'jitter'"):
        qoe.batch.run([{"capture": str(VOICE), "video.jitter": 1}], workers=0, progress=False)
    with pytest.raises(InputError, match="added by the batch"):
        qoe.batch.run([{"capture": str(VOICE), "error": "x"}], workers=0, progress=False)
    with pytest.raises(InputError, match="rows 0 and 1 are the same"):
        qoe.batch.run([{"capture": str(VOICE)}, {"capture": str(VOICE)}], workers=0, progress=False)
    with pytest.raises(InputError, match="not both"):
        qoe.batch.run([{"capture": str(VOICE)}], workers=2, scheduler="tcp://127.0.0.1:1", progress=False)
    with pytest.raises(InputError, match=r"\.csv or \.parquet"):
        qoe.batch.run([{"capture": str(VOICE)}], workers=0, output=tmp_path / "r.txt", progress=False)
    with pytest.raises(InputError, match="give output="):
        qoe.batch.run([{"capture": str(VOICE)}], workers=0, resume=True, progress=False)
    with pytest.raises(InputError, match="no such file"):
        qoe.batch.run(tmp_path / "nope.csv", workers=0, progress=False)


def test_row_key_ignores_order_and_empty_cells():
    a = qoe.batch.row_key({"capture": "a.pcap", "buffer": 64, "run": None, "reference": ""})
    assert a == qoe.batch.row_key({"buffer": 64, "capture": "a.pcap"})
    assert a != qoe.batch.row_key({"buffer": 8, "capture": "a.pcap"})
    assert len(a) == 16 and int(a, 16) >= 0


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_output_file_holds_the_returned_rows(tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    out = tmp_path / f"results{suffix}"
    manifest = [*_manifest(), {"capture": str(tmp_path / "missing.pcap"), "run": 9}]
    df = qoe.batch.run(manifest, workers=0, progress=False, output=out)
    back = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out)
    assert len(back) == len(df) == 5
    back = back.sort_values(["row"], kind="stable").reset_index(drop=True)
    for col in ("row", "row_key", "buffer", "workload", "mos", "plt_s", "frames_decoded", "error"):
        assert all(_same(a, b) or (pd.isna(a) and pd.isna(b)) for a, b in zip(df[col], back[col])), col
    assert back["error"].notna().sum() == 1


def test_results_are_written_as_rows_complete(tmp_path):
    """The first rows are in the file while a later row is still being read (a FIFO nobody writes yet)."""
    fifo = tmp_path / "late.pcap"
    os.mkfifo(fifo)
    out = tmp_path / "results.csv"
    manifest = [{"capture": str(VOICE), "run": 1}, {"capture": str(WEB), "run": 2},
                {"capture": str(fifo), "kind": "voice", "run": 3}]
    result = {}
    worker = threading.Thread(target=lambda: result.update(df=qoe.batch.run(manifest, workers=0, progress=False,
                                                                             output=out)))
    worker.start()
    try:
        deadline = time.monotonic() + 60
        rows = 0
        while time.monotonic() < deadline and rows < 3:
            time.sleep(0.05)
            rows = len(pd.read_csv(out)) if out.is_file() and out.stat().st_size else 0
        assert rows == 3 and worker.is_alive()  # voice (2 directions) and web written; run() not done
    finally:
        with open(fifo, "wb") as fh:  # lets the blocked row go on: it reads garbage and fails
            fh.write(b"not a capture")
        worker.join(60)
    df = result["df"]
    assert len(df) == 4 and isinstance(df["error"].iloc[-1], str)
    assert len(pd.read_csv(out)) == 4


def test_resume_skips_the_rows_done_and_runs_the_failed_ones_again(tmp_path):
    caps = tmp_path / "caps"
    caps.mkdir()
    for p in (VOICE, WEB):
        shutil.copy(p, caps / p.name)
    manifest = [{"capture": f"caps/{VOICE.name}", "run": 1}, {"capture": f"caps/{WEB.name}", "run": 2},
                {"capture": "caps/later.pcap", "kind": "web", "run": 3}]
    out = tmp_path / "results.csv"
    first = qoe.batch.run(manifest, workers=0, progress=False, output=out, root=tmp_path)
    assert first.drop_duplicates("row")["error"].notna().tolist() == [False, False, True]
    # rows 0 and 1 are done: were they scored again, their captures (gone now) would fail
    (caps / VOICE.name).unlink()
    (caps / WEB.name).unlink()
    shutil.copy(WEB, caps / "later.pcap")  # the failed row can now be scored
    manifest.append({"capture": f"caps/{VOICE.name}", "run": 4})  # a new row: runs, and fails
    again = qoe.batch.run(manifest, workers=0, progress=False, output=out, root=tmp_path, resume=True)
    errors = again.drop_duplicates("row").set_index("row")["error"]
    assert errors.isna().tolist() == [True, True, True, False]
    assert again[again["row"] < 2]["seconds"].tolist() == first[first["row"] < 2]["seconds"].tolist()
    assert again[again["row"] == 2]["plt_s"].notna().all()
    # the file holds one attempt per row: the earlier failure of row 2 is gone
    back = pd.read_csv(out)
    assert len(back) == len(again) and back.groupby("row_key")["error"].apply(lambda e: e.notna().sum()).sum() == 1
    # resuming from an earlier output into a new (Parquet) file
    if pytest.importorskip("pyarrow"):
        third = qoe.batch.run(manifest, workers=0, progress=False, output=tmp_path / "r.parquet", resume=out,
                              root=tmp_path)
        assert third["row_key"].tolist() == again["row_key"].tolist()
        assert len(pd.read_parquet(tmp_path / "r.parquet")) == len(third)


def test_a_script_without_the_main_guard_gets_one_clear_error_at_once(tmp_path):
    """Pool workers are spawned, and each imports the caller's script again: one that calls
    qoe.batch.run at its top level starts a batch inside every worker, which dies there.
    That raises InputError (the guard named) as soon as the pool breaks with no worker ever
    up, instead of every row being retried and reported as a crash of its own (a batch of
    two rows took 2.9 s and said "a crash in a native library?"; one of 168 rows, 144 s)."""
    import subprocess
    import sys

    script = tmp_path / "unguarded.py"
    script.write_text("import qoe.batch\n"
                      f"qoe.batch.run([{{'capture': {str(WEB)!r}, 'kind': 'web', 'run': i}} for i in (1, 2)], workers=2, "
                      "progress=False)\n"
                      "print('finished')\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 1 and "finished" not in r.stdout
    # (multiprocessing's resource tracker may warn of the semaphores the dying workers' own
    # pools left, at its exit: after the traceback, from another process; not qoe's words)
    lines = [line for line in r.stderr.strip().splitlines() if "resource_tracker" not in line]
    last = lines[-1]
    assert last.startswith("qoe.errors.InputError: qoe.batch: every worker process died as it started"), last
    assert 'if __name__ == "__main__":' in last and "workers=0" in last


def test_a_process_pool_gives_the_same_results():
    manifest = _manifest()[:2]  # each spawned worker imports the scorers it needs: voice and web only
    df = qoe.batch.run(manifest, workers=2, progress=False)
    _check_against_score(df, manifest)


@pytest.fixture(scope="module")
def dask_client():
    """Two workers in this process (``processes=False``: no interpreter to start, quick in the
    suite); benchmarks/batch.py runs the same path on worker processes."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster, set_as_default=False) as client:
            yield client


def test_dask_client_and_address_give_the_same_results(dask_client, tmp_path):
    manifest = [*_manifest(), {"capture": str(tmp_path / "missing.pcap"), "run": 9}]
    df = qoe.batch.run(manifest, scheduler=dask_client, progress=False)
    _check_against_score(df[df["row"] < 3], manifest[:3])
    assert "no such capture file" in df[df["row"] == 3]["error"].iloc[0]
    by_address = qoe.batch.run(manifest[:2], scheduler=dask_client.scheduler.address, progress=False)
    assert by_address["mos"].tolist() == df[df["row"] < 2]["mos"].tolist()


def test_cli_batch_writes_the_output_and_resumes(tmp_path):
    from qoe_cli.main import cli

    manifest = tmp_path / "runs.csv"
    pd.DataFrame([*_manifest()[:2], {"capture": "missing.pcap", "run": 3}]).to_csv(manifest, index=False)
    out = tmp_path / "results.csv"
    runner = CliRunner()
    res = runner.invoke(cli, ["batch", str(manifest), "-o", str(out), "--workers", "0", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "3 rows, 4 results, 1 failed" in res.output
    assert len(pd.read_csv(out)) == 4
    res = runner.invoke(cli, ["batch", str(manifest), "-o", str(out), "--workers", "0", "--resume", "--no-progress"])
    assert res.exit_code == 0 and "3 rows, 4 results, 1 failed" in res.output
    res = runner.invoke(cli, ["batch", str(manifest), "-o", str(tmp_path / "r.txt")])
    assert res.exit_code == 2 and "qoe: error:" in res.output and ".csv or .parquet" in res.output


def test_capture_error_messages_name_the_file(tmp_path):
    """The error column holds the QoEError's own message, which names the file."""
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"\x00" * 64)
    df = qoe.batch.run([{"capture": str(bad)}], workers=0, progress=False)
    with pytest.raises(CaptureError) as exc:
        qoe.score(bad)
    assert df["error"].iloc[0] == str(exc.value) and "bad.pcap" in df["error"].iloc[0]


def test_references_separated_by_semicolons_in_a_csv_cell(tmp_path):
    speech = DATA / "voice" / "speech"
    talk, listen = speech / "de_male_8k.wav", speech / "en_us_male_8k.wav"  # as in tests/test_api.py
    manifest = tmp_path / "runs.csv"
    pd.DataFrame([{"capture": "captures/up-b64_client.pcap", "sender_capture": "captures/up-b64_server.pcap",
                   "reference": "speech/de_male_8k.wav; speech/en_us_male_8k.wav"}]).to_csv(manifest, index=False)
    df = qoe.batch.run(manifest, workers=0, progress=False, root=DATA / "voice")
    want = _direct({"capture": str(VOICE), "sender_capture": str(VOICE_SERVER), "reference": [talk, listen]})
    assert df["error"].isna().all()
    assert df["mos_lqo"].tolist() == want["mos_lqo"].tolist() and want["mos_lqo"].notna().all()
    assert df["mos"].tolist() == want["mos"].tolist()
