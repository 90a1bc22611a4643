"""Every ``qoe`` command's ``--format json`` is strict RFC 8259 JSON, and ``--format csv`` has empty cells for NaN.

RFC 8259 §6 does not allow NaN or Infinity; JavaScript's ``JSON.parse``, jq and most JSON
libraries reject them. Values with no number (the jitter of a stream whose clock rate is
unknown, the delta when every packet carries the marker bit, a full-reference score
without a reference) are ``null`` in JSON and empty in CSV.
"""

from __future__ import annotations

import csv
import io
import json
import socket
import struct
from pathlib import Path

import dpkt
import pytest
from click.testing import CliRunner

from qoe_cli.main import cli

DATA = Path(__file__).resolve().parents[1] / "data" / "voice"
CLIENT, SERVER = DATA / "captures" / "up-b64_client.pcap", DATA / "captures" / "up-b64_server.pcap"
SPEECH = DATA / "speech" / "en_us_male_8k.wav"
needs_data = pytest.mark.skipif(not (CLIENT.is_file() and SERVER.is_file() and SPEECH.is_file()),
                                reason="data/voice samples not present")


def strict_loads(text: str):
    """``json.loads`` that refuses NaN, Infinity and -Infinity (RFC 8259 §6)."""
    def refuse(token):
        raise ValueError(f"not RFC 8259 JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def _run(*args) -> str:
    res = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def _frame(src, sport, dst, dport, data):
    u = dpkt.udp.UDP(sport=sport, dport=dport, data=data)
    u.ulen = len(u)
    ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=17, data=u)
    ip.len = len(ip)
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=ip))


@pytest.fixture()
def no_numbers(tmp_path):
    """Two RTP streams whose jitter or delta have no value.

    PT 96 without SDP has no known clock rate (RFC 3551 §6: dynamic), and its timestamps
    advance at 30000 ticks/s, near none of the rates qoe.rtp infers from (8000, 16000,
    48000, 90000 Hz, within 20 %), so no jitter; a
    stream whose every packet has the marker bit has no delta (tshark leaves marked
    packets out of delta and jitter).
    """
    path = tmp_path / "nan.pcap"
    with open(path, "wb") as fh:
        w = dpkt.pcap.Writer(fh, nano=True)
        for i in range(30):
            t = 1_700_000_000 + 0.02 * i
            dyn = struct.pack("!BBHII", 0x80, 96, i, 600 * i, 0xD) + bytes(60)
            marked = struct.pack("!BBHII", 0x80, 0x80 | 0, 100 + i, 160 * i, 0xE) + b"\xff" * 160
            w.writepkt(_frame("192.0.2.1", 5004, "198.51.100.2", 5006, dyn), ts=t)
            w.writepkt(_frame("192.0.2.1", 6004, "198.51.100.2", 6006, marked), ts=t + 0.001)
    return path


def test_streams_json_has_null_where_there_is_no_number(no_numbers):
    doc = strict_loads(_run("streams", no_numbers, "--format", "json"))
    by_ssrc = {s["ssrc"]: s for s in doc["streams"]}
    dyn, marked = by_ssrc["0x0000000d"], by_ssrc["0x0000000e"]
    assert dyn["clock_rate"] is None and dyn["mean_jitter_ms"] is None and dyn["max_jitter_ms"] is None
    assert marked["max_delta_ms"] is None and marked["packets"] == 30


def test_streams_csv_has_empty_cells_where_there_is_no_number(no_numbers):
    rows = {r["ssrc"]: r for r in csv.DictReader(io.StringIO(_run("streams", no_numbers, "--format", "csv")))}
    assert rows["0x0000000d"]["mean_jitter_ms"] == "" and rows["0x0000000e"]["max_delta_ms"] == ""
    assert rows["0x0000000d"]["packets"] == "30"


def test_emodel_and_web_json_are_strict():
    assert strict_loads(_run("emodel", "--mouth-to-ear-ms", "150", "--format", "json"))["r"] > 0
    doc = strict_loads(_run("web", "g1030", "0.4", "--format", "json"))
    assert isinstance(doc, list) and len(doc) == 1  # a list whatever the number of load times


@needs_data
def test_score_json_and_csv_without_a_reference():
    doc = strict_loads(_run("score", CLIENT, "--sender-capture", SERVER, "--format", "json"))
    first = doc["results"][0]
    assert first["full_reference"] is None and first["mos"] is not None
    rows = list(csv.DictReader(io.StringIO(_run("score", CLIENT, "--sender-capture", SERVER, "--format", "csv"))))
    assert rows[0]["mos_lqo"] == "" and rows[0]["z"] == "" and float(rows[0]["mos_network"]) > 1.0


@needs_data
def test_delay_extract_and_pesq_json_are_strict(tmp_path):
    records = strict_loads(_run("delay", SERVER, CLIENT, "--format", "json"))
    assert isinstance(records, list) and all(r["matched"] > 0 for r in records)
    one = strict_loads(_run("delay", SERVER, CLIENT, "--format", "json", "--ssrc", records[0]["ssrc"]))
    assert isinstance(one, dict) and one["ssrc"] == records[0]["ssrc"]  # --ssrc: one record
    summary = strict_loads(_run("extract", CLIENT, "--ssrc", records[0]["ssrc"], "-o", tmp_path / "x.wav",
                                "--format", "json"))
    assert summary["ssrc"] == records[0]["ssrc"]
    assert strict_loads(_run("pesq", SPEECH, SPEECH, "--format", "json"))["mos_lqo"] > 4.0


@pytest.mark.parametrize("args, name, first", [
    ([], "out.json", "{"),                          # no --format: the suffix says JSON
    ([], "out.CSV", "r,mos,"),                      # ... or CSV, in either case
    ([], "out.txt", "r "),                          # anything else: the table
    (["--format", "table"], "out.json", "r "),      # a --format given wins, before or after -o
    (["--format", "csv"], "out.json", "r,mos,"),
])
def test_without_format_an_output_named_json_or_csv_gets_that_format(tmp_path, args, name, first):
    """`qoe emodel -o out.json` wrote a text table into out.json; --format is now taken from
    the output's suffix when not given (.json, .csv), on any command with -o."""
    out = tmp_path / name
    for order in ([*args, "-o", str(out)], ["-o", str(out), *args]):
        res = CliRunner().invoke(cli, ["emodel", *order])
        assert res.exit_code == 0, res.output
        assert out.read_text().startswith(first), (order, out.read_text()[:40])
    if first == "{":
        assert json.loads(out.read_text())["r"] == pytest.approx(93.2062, abs=1e-4)  # G.107's default
