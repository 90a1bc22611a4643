"""qoe.score and qoe.Report: the one-call public API, and the ``qoe score`` command."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import dpkt
import numpy as np
import pytest
from click.testing import CliRunner

import qoe
from qoe.errors import InputError, QoEWarning, StreamNotFoundError
from qoe.voice import CallOptions, Reference
from qoe.web import WebOptions

VOICE = Path(__file__).resolve().parents[1] / "data" / "voice"
CAPS = VOICE / "captures"
CLIENT, SERVER = CAPS / "up-b64_client.pcap", CAPS / "up-b64_server.pcap"
TALK, LISTEN = VOICE / "speech" / "de_male_8k.wav", VOICE / "speech" / "en_us_male_8k.wav"  # as in scenarios.jsonl
needs_data = pytest.mark.skipif(not (CLIENT.is_file() and SERVER.is_file()), reason="data/voice captures not present")


@pytest.fixture(scope="module")
def report():
    with warnings.catch_warnings():
        warnings.simplefilter("error", QoEWarning)
        return qoe.score(CLIENT, reference=[TALK, LISTEN], sender_capture=SERVER)


@pytest.fixture
def dns_only(tmp_path):
    """A capture with UDP traffic but no RTP: two DNS queries (port 53 is never taken for RTP)."""
    path = tmp_path / "dns.pcap"
    with open(path, "wb") as fh:
        w = dpkt.pcap.Writer(fh)
        for i in range(2):
            udp = dpkt.udp.UDP(sport=33000 + i, dport=53, data=b"\x12\x34\x01\x00" + bytes(20))
            udp.ulen = len(udp)
            ip = dpkt.ip.IP(src=bytes([192, 0, 2, 2]), dst=bytes([192, 0, 2, 53]), p=dpkt.ip.IP_PROTO_UDP, data=udp)
            ip.len = len(ip)
            eth = dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
            w.writepkt(bytes(eth), ts=1.0 + i)
    return path


def test_exported():
    assert "score" in qoe.__all__ and "Report" in qoe.__all__
    assert qoe.score is qoe.api.score and qoe.Report is qoe.report.Report


@needs_data
def test_report_has_a_result_per_direction(report):
    assert report.kind == "voice" and report.source == str(CLIENT) and len(report) == 2
    assert [d.direction for d in report] == ["user talks", "user listens"]
    assert report.inputs["references"] == [TALK.name, LISTEN.name]
    assert report.inputs["sender_capture"] == str(SERVER)
    assert any("where the first of the two captures was taken" in n for n in report.notes)


@needs_data
def test_frames_records_dict_and_json(report):
    frame = report.to_frame()
    assert list(frame["direction"]) == ["user talks", "user listens"]
    assert {"mos_lqo", "z1", "z2", "z", "mos", "r", "mos_network_min", "network_source", "notes"} <= set(frame.columns)
    assert frame["mos"].tolist() == [d.mos for d in report]
    windows = report.to_frame("windows")
    assert len(windows) == 2 and {"call_id", "direction", "ssrc", "window_start_s", "mos"} <= set(windows.columns)
    plays = report.to_frame("plays")
    assert plays["reference"].tolist() == [TALK.name, LISTEN.name]
    assert report.tables() == ("results", "windows", "plays")
    d = report.to_dict()
    assert d["results"][0]["full_reference"]["plays"][0]["reference"] == TALK.name
    # strict JSON: no NaN tokens (NaN becomes null)
    text = report.to_json()
    back = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert back["results"][1]["direction"] == "user listens"
    with pytest.raises(InputError, match="unknown table 'frames'; this voice report has: results, windows, plays"):
        report.to_records("frames")


@needs_data
def test_options_reach_the_scorer():
    with pytest.warns(QoEWarning, match="assumed"):
        base = qoe.score(CLIENT, kind="voice", jitter_buffer="fixed:80", user="192.0.2.2", ssrc="0x15e00005")
    talk, listen = base.results  # the call holding that stream: both its directions
    assert listen.ssrc == 0x15E00005 and listen.direction == "user listens" and talk.direction == "user talks"
    assert listen.jitter_buffer == talk.jitter_buffer == "fixed:80"
    assert base.inputs["jitter_buffer"] == "fixed:80" and base.inputs["ssrc"] == "0x15e00005"
    with pytest.raises(StreamNotFoundError, match="no RTP audio stream with SSRC 0x00000001; present: 0x7a1c0005"):
        qoe.score(CLIENT, network_delay_ms=0.0, ssrc=1)
    options = CallOptions(network_delay_ms=40.0, conceal="silence", delay_basis="direction", window_s=2.0)
    given = qoe.score(CLIENT, kind="voice", options=options)
    d = given.results[1]
    assert d.delay.network_source == "given" and d.network.codec == "G.711" and d.delay.basis == "direction"
    assert len(d.network.windows.start_s) == 4  # 8 s call in 2 s windows
    assert given.inputs["network_delay_ms"] == 40.0 and given.inputs["delay_basis"] == "direction"
    # the option's old name still works, with a DeprecationWarning
    with pytest.deprecated_call(match="'one_way_ms' is now 'network_delay_ms'"):
        old = qoe.score(CLIENT, kind="voice", one_way_ms=40.0, conceal="silence", delay_basis="direction",
                        window_s=4.0)
    assert old.inputs["window_s"] == 4.0 and old.results[1].delay == d.delay


def test_an_option_is_given_one_way(dns_only):
    """A keyword never silently overrides the options object, and a name two kinds share needs a kind."""
    with pytest.raises(InputError, match=r"option 'jitter_buffer' is ambiguous: it is an option of voice and video; "
                                         r"pass kind= or options=\{voice: CallOptions\(jitter_buffer=...\), "
                                         r"video: VideoOptions\(jitter_buffer=...\)\}"):
        qoe.score(dns_only, jitter_buffer="fixed:60")
    with pytest.raises(InputError, match=r"option 'window_s' given both as a keyword and in "
                                         r"options=CallOptions\(...\): give it once, as CallOptions\(window_s=...\)"):
        qoe.score(dns_only, options=CallOptions(window_s=2.0), window_s=4.0)
    with pytest.raises(InputError, match="option 'idle_gap_s' given both"):
        qoe.score(dns_only, options={"web": WebOptions(idle_gap_s=2.0)}, idle_gap_s=3.0)


BROWSER = Path(__file__).resolve().parents[1] / "data" / "web" / "browser" / "captures"


@pytest.mark.skipif(not (BROWSER / "h2-idle.pcap").is_file(), reason="data/web/browser not present")
def test_a_key_log_keyword_goes_to_every_kind_that_takes_keys():
    """``keylog`` (web and streaming) and ``srtp_keys`` (voice and video) name the same secrets
    for every kind: as keywords they need no kind (the CLI's --keylog gives both), unlike a name
    whose meaning differs between kinds. Without keys this Chromium HTTP/2 page shows the 3 of
    its 10 encrypted connections that carried data as 3 objects (7 were opened and never used);
    decrypted, its 41 requests, the 41 entries of the browser's own HAR (data/web/browser/measured.md)."""
    cap, keys = BROWSER / "h2-idle.pcap", BROWSER / "h2-idle.keylog"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        shared = qoe.score(cap, keylog=keys)
        web = qoe.score(cap, kind="web", keylog=keys)
        plain = qoe.score(cap)
    assert [r.objects for r in shared.results] == [r.objects for r in web.results] == [41]
    assert [r.objects for r in plain.results] == [3]
    assert qoe.api.SHARED_OPTIONS == {"keylog", "srtp_keys"}
    with pytest.raises(InputError, match="option 'keylog' given both as a keyword and in options=WebOptions"):
        qoe.score(cap, options={"web": WebOptions(idle_gap_s=2.0)}, keylog=keys)


@needs_data
def test_references_as_objects_and_resampled_files(tmp_path):
    from qoe.voice.p862 import load_speech

    x, fs = load_speech(LISTEN)
    rep = qoe.score(CLIENT, reference=Reference(x, fs, "mine"), sender_capture=SERVER)
    assert rep.results[1].full_reference.plays[0].reference == "mine"
    assert rep.results[0].full_reference is None  # the talk direction carries other speech
    wide = VOICE / "speech" / "en_us_male_16k.wav"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the other reference is not in the call
        rep = qoe.score(CLIENT, reference=[wide], sender_capture=SERVER)
    # a 16 kHz file stays at 16 kHz (P.862.2 rate); the G.711 direction brings it to 8 kHz
    assert not any("resampled" in n for n in rep.notes)
    assert f"reference {wide.name}: resampled from 16000 Hz to 8000 Hz (polyphase) to match the stream" in (
        rep.results[1].notes)
    assert rep.results[1].full_reference.mos_lqo > 3.5


def test_bad_kinds_and_options_raise(dns_only):
    with pytest.raises(StreamNotFoundError, match="dns.pcap: no page load found"):
        qoe.score(dns_only, kind="web")
    with pytest.raises(InputError, match="kind must be one of"):
        qoe.score(dns_only, kind="fax")
    with pytest.raises(InputError, match=r"unknown option\(s\) jitter; voice options: jitter_buffer"):
        qoe.score(dns_only, jitter="adaptive")
    with pytest.raises(InputError, match="options must be a qoe.voice.CallOptions, a qoe.video.VideoOptions, a qoe.web"):
        qoe.score(dns_only, options={"voice": {"jitter_buffer": "adaptive"}})
    with pytest.raises(InputError, match="variant must be one of"):
        qoe.score(dns_only, variant="vmaf")


def test_nothing_to_score(dns_only):
    with pytest.raises(StreamNotFoundError, match=r"dns.pcap: no RTP audio stream found in 2 UDP datagrams"):
        qoe.score(dns_only, kind="voice")
    with pytest.raises(StreamNotFoundError, match=r"dns.pcap: no video stream found"):
        qoe.score(dns_only, kind="video")
    with pytest.warns(QoEWarning, match="nothing scorable found"):
        rep = qoe.score(dns_only)
    assert len(rep) == 0 and rep.to_frame().empty and json.loads(rep.to_json())["results"] == []


def test_bad_reference(dns_only, tmp_path):
    with pytest.raises(InputError, match="reference #1: give a file path or a qoe.voice.Reference"):
        qoe.score(dns_only, reference=[np.zeros(8000)])
    with pytest.raises(InputError, match="cannot read speech file"):
        qoe.score(dns_only, reference=tmp_path / "missing.wav")


# ---- the command ------------------------------------------------------------------------------


def _run(*args):
    from qoe_cli.main import cli

    return CliRunner().invoke(cli, ["score", *map(str, args)])


@needs_data
def test_cli_table_json_csv(tmp_path):
    res = _run(CLIENT, "--ref", TALK, "--ref", LISTEN, "--sender-capture", SERVER)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].split()[:4] == ["call_id", "direction", "stream", "codec"]
    assert "user talks" in lines[2] and "user listens" in lines[3]
    assert any(line.startswith("note: [user talks, user listens] network one-way delay: measured") for line in lines)
    out = tmp_path / "r.json"
    res = _run(CLIENT, "--sender-capture", SERVER, "--format", "json", "-o", out)
    assert res.exit_code == 0 and res.output == ""
    doc = json.loads(out.read_text())
    assert doc["kind"] == "voice" and doc["results"][0]["full_reference"] is None
    res = _run(CLIENT, "--sender-capture", SERVER, "--format", "csv", "--details", "windows", "--window-s", "4")
    header, *rows = res.output.strip().splitlines()
    assert header.startswith("call_id,direction,stream,ssrc,window_start_s") and len(rows) == 4


def test_cli_errors_are_one_line(dns_only):
    res = _run(dns_only, "--kind", "web")
    assert res.exit_code == 2 and "no page load found" in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1
    res = _run(dns_only, "--kind", "voice")
    assert res.exit_code == 2 and "no RTP audio stream found" in res.output


DTMF = VOICE / "field" / "dtmf.pcap"


@pytest.mark.skipif(not DTMF.is_file(), reason="data/voice/field not present")
def test_a_call_the_capture_cut_is_marked_partial(tmp_path):
    """dtmf.pcap holds INVITE, 200, ACK (frames 1-3), the RTP, then BYE and 200 (frames 164-165:
    ``tshark -r dtmf.pcap -Y sip -T fields -e frame.number -e sip.Method -e sip.Status-Code``).
    Cut at frame 100 (dpkt, record by record) the call was answered and never ended in the
    capture: each direction says it is partial; the whole capture's do not."""
    cut = tmp_path / "cut.pcap"
    with DTMF.open("rb") as src, cut.open("wb") as dst:
        reader = dpkt.pcap.Reader(src)
        writer = dpkt.pcap.Writer(dst, linktype=reader.datalink(), nano=True)
        for i, (ts, buf) in enumerate(reader, start=1):
            if i > 100:
                break
            writer.writepkt(buf, ts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        whole, part = qoe.score(DTMF, kind="voice"), qoe.score(cut, kind="voice")
    assert len(part) == len(whole) > 0
    assert all(any(n.startswith("partial:") for n in d.notes) for d in part)
    assert not any(n.startswith("partial:") for d in whole for n in d.notes)
