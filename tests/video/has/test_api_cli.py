"""Streaming sessions through qoe.score (kind "streaming", and "auto") and the `qoe has` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import qoe
from qoe.errors import StreamNotFoundError
from qoe.video.has import StreamingOptions
from qoe_cli.main import cli

SESSIONS = Path(__file__).resolve().parents[3] / "data" / "video" / "has" / "sessions"
CAP = SESSIONS / "dash-constrained.pcap.gz"
WEB_ONLY = Path(__file__).resolve().parents[3] / "data" / "web" / "captures" / "http10-idle-b64-curl_client.pcap"


def test_score_kind_streaming():
    rep = qoe.score(CAP, kind="streaming", options=StreamingOptions(qoe_preset="yin-balanced"))
    assert rep.kind == "streaming" and len(rep.results) == 1
    rec = rep.to_records()[0]
    assert rec["kind"] == "streaming" and rec["qoe_preset"] == "yin-balanced"
    assert {"results", "segments", "seconds", "stalls", "played"} <= set(rep.tables())
    assert len(rep.to_records("segments")) >= 36
    json.loads(rep.to_json())


@pytest.mark.slow
def test_score_auto_finds_the_session_beside_the_page_loads():
    rep = qoe.score(CAP)
    kinds = {r.kind for r in rep.results}
    assert kinds == {"web", "streaming"}
    direct = qoe.score(CAP, kind="streaming").results[0]
    auto = next(r for r in rep.results if r.kind == "streaming")
    assert auto.to_record() == direct.to_record()


def test_no_session_is_an_error_when_asked_for():
    if not WEB_ONLY.exists():
        pytest.skip("web sample absent")
    with pytest.raises(StreamNotFoundError, match="no adaptive streaming session"):
        qoe.score(WEB_ONLY, kind="streaming")


def test_cli_sessions_and_details():
    r = CliRunner().invoke(cli, ["has", "sessions", str(CAP), "--format", "json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.output)[0]
    assert s["protocol"] == "dash" and s["segments"] and s["seconds"]
    r = CliRunner().invoke(cli, ["has", "sessions", str(CAP), "--details", "stalls", "--format", "csv"])
    assert r.exit_code == 0 and r.output.startswith("session,")


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_cli_sessions_carry_the_notes(fmt):
    """What qoe inferred, or could not see, is in the output: the notes, below the table or in the JSON."""
    h3 = SESSIONS / "hls-h3.pcap.gz"
    r = CliRunner().invoke(cli, ["has", "sessions", str(h3), "--infer-windows", "--format", fmt])
    assert r.exit_code == 0, r.output
    if fmt == "table":
        notes = [ln.split(": ", 2)[2] for ln in r.output.splitlines() if ln.startswith("note: session 0: ")]
    else:
        notes = json.loads(r.output)[0]["notes"]
    assert any(n.startswith("HTTP/3 (QUIC) without keys: 10 response(s)") for n in notes)
    assert any(n.startswith("multiplexed HTTP/2 or HTTP/3 hides the segment boundaries") for n in notes)


def test_cli_p1203_input(tmp_path):
    out = tmp_path / "p.json"
    r = CliRunner().invoke(cli, ["has", "p1203-input", str(CAP), "--p1203-device", "mobile", "-o", str(out)])
    assert r.exit_code == 0, r.output
    j = json.loads(out.read_text())
    assert j["IGen"]["device"] == "mobile" and j["I13"]["segments"] and j["I23"]["stalling"]
    # issue 21: the flags are the StreamingOptions fields; the old spellings work one release more
    old = tmp_path / "old.json"
    r = CliRunner().invoke(cli, ["has", "p1203-input", str(CAP), "--device", "mobile", "--startup-threshold", "1.9",
                                 "-o", str(old)])
    assert r.exit_code == 0, r.output
    assert "--device is deprecated: use --p1203-device" in r.stderr
    assert "--startup-threshold is deprecated: use --startup-threshold-s" in r.stderr
    assert json.loads(old.read_text()) == j


def test_cli_score_streaming_table():
    r = CliRunner().invoke(cli, ["score", str(CAP), "--kind", "streaming"])
    assert r.exit_code == 0, r.output
    assert "startup_delay_s" in r.output and "dash" in r.output


def test_cli_plot(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "s.png"
    r = CliRunner().invoke(cli, ["has", "plot", str(CAP), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.stat().st_size > 1000


@pytest.mark.slow
def test_batch_runs_streaming_rows():
    from qoe.batch import run

    rows = [{"capture": str(CAP), "kind": "streaming", "label": "c", "streaming.startup_threshold_s": 4.0},
            {"capture": str(SESSIONS / "hls-ample.pcap.gz"), "kind": "streaming", "label": "a"}]
    frame = run(rows, workers=1)
    assert list(frame["label"]) == ["c", "a"]
    assert list(frame["protocol"]) == ["dash", "hls"]
    assert frame["startup_threshold_s"].tolist() == [4.0, 1.9]


def test_cli_keylog_opens_an_https_session():
    """``--keylog`` (StreamingOptions.keylog) on ``qoe has sessions`` and ``qoe score``: the
    HTTPS session's manifest URL and segment count, as in the player's log (36 media segments)."""
    tls = CAP.parent / "dash-tls.pcap.gz"
    key = str(CAP.parent / "dash-tls.keylog")
    r = CliRunner().invoke(cli, ["has", "sessions", str(tls), "--keylog", key, "--format", "json"])
    assert r.exit_code == 0, r.output
    (s,) = json.loads(r.output)
    assert s["manifest_url"] == "https://hs.test/dash/manifest.mpd" and s["inferred"] is False
    assert s["video_segments"] + s["audio_segments"] == 36
    r = CliRunner().invoke(cli, ["score", str(tls), "--kind", "streaming", "--keylog", key])
    assert r.exit_code == 0 and "https://hs.test/dash/manifest.mpd" in r.output, r.output


def test_cli_infer_windows_and_segment_duration():
    """``--infer-windows`` and ``--segment-duration-s`` (StreamingOptions.infer_windows,
    segment_duration_s): the HTTPS session without its key log nor a manifest, labelled inferred;
    its 18 video segments as in the player's log, and the bitrate halves when D doubles."""
    tls = CAP.parent / "dash-tls.pcap.gz"
    r = CliRunner().invoke(cli, ["has", "sessions", str(tls), "--infer-windows", "--format", "json"])
    assert r.exit_code == 0, r.output
    (s,) = json.loads(r.output)
    assert s["inferred"] is True and s["inference"] == "windows" and s["video_segments"] == 18
    assert s["inferred_segments"] == s["video_segments"] + s["audio_segments"]
    r = CliRunner().invoke(cli, ["has", "sessions", str(tls), "--infer-windows", "--segment-duration-s", "4",
                                 "--format", "json"])
    (s4,) = json.loads(r.output)
    assert s4["bitrate_kbps"] == pytest.approx(s["bitrate_kbps"] / 2, rel=0.02)
