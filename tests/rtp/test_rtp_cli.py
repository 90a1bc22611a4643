"""``qoe streams``: table, JSON and CSV output of the streams and calls in a capture."""

from __future__ import annotations

import csv
import io
import json
import socket
import struct

import dpkt
import pytest
from click.testing import CliRunner

from qoe_cli.main import cli

A, B = "192.0.2.1", "198.51.100.2"


def _frame(src, sport, dst, dport, data):
    u = dpkt.udp.UDP(sport=sport, dport=dport, data=data)
    u.ulen = len(u)
    ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=17, data=u)
    ip.len = len(ip)
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=ip))


@pytest.fixture()
def capture(tmp_path):
    """Two PCMU streams; the first loses packets 10..12 (3 lost in one burst)."""
    path = tmp_path / "two.pcap"
    with open(path, "wb") as fh:
        w = dpkt.pcap.Writer(fh, nano=True)
        for i in range(50):
            t = 1_700_000_000 + 0.02 * i
            if not 10 <= i <= 12:
                w.writepkt(_frame(A, 4000, B, 4002, struct.pack("!BBHII", 0x80, 0, i, 160 * i, 0xA) + b"\xff" * 160), ts=t)
            w.writepkt(_frame(B, 4002, A, 4000, struct.pack("!BBHII", 0x80, 0, 9 + i, 160 * i, 0xB) + b"\xff" * 160), ts=t + 0.001)
    return str(path)


def test_table(capture):
    r = CliRunner().invoke(cli, ["streams", capture])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == f"RTP streams in {capture}: 2"
    assert "loss_%" in lines[1] and "max_jitter_ms" in lines[1]
    row = lines[3].split()
    assert row[:4] == [f"{A}:4000", f"{B}:4002", "0x0000000a", "PCMU"] and row[7:9] == ["47", "3"]


def test_json_and_output_file(capture, tmp_path):
    out = tmp_path / "s.json"
    r = CliRunner().invoke(cli, ["streams", capture, "--format", "json", "-o", str(out)])
    assert r.exit_code == 0 and r.output == ""
    doc = json.loads(out.read_text())
    assert doc["calls"] == []
    a, b = doc["streams"]
    assert (a["ssrc"], a["packets"], a["lost"], a["loss_bursts"], a["max_burst_length"]) == ("0x0000000a", 47, 3, 1, 3)
    assert (b["ssrc"], b["lost"], b["codec"], b["clock_rate"]) == ("0x0000000b", 0, "PCMU", 8000)


def test_csv(capture):
    r = CliRunner().invoke(cli, ["streams", capture, "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(r.output)))
    assert [(x["ssrc"], x["lost"]) for x in rows] == [("0x0000000a", "3"), ("0x0000000b", "0")]


def test_not_a_capture_is_one_line_and_exit_2(tmp_path):
    p = tmp_path / "x.pcap"
    p.write_bytes(b"GIF89a not a capture")
    r = CliRunner().invoke(cli, ["streams", str(p)])
    assert r.exit_code == 2
    assert r.output.startswith("qoe: error: ") and "x.pcap" in r.output and r.output.count("\n") == 1
