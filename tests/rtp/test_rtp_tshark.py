"""qoe's RTP statistics equal ``tshark -q -z rtp,streams`` on the same capture.

Three sources of tshark output:

* stored: ``data/voice/captures/<capture>.tshark-rtp-streams.txt``, each starting with the
  exact command and tshark version that printed it (made by data/voice/make_samples.sh);
* live on the same real captures, when tshark is installed;
* live on captures crafted here (the tshark-convention cases of test_rtp_stats.py and a
  seeded random set with loss, duplicates, reordering, marker bits, comfort noise,
  timestamp jumps and sequence/timestamp wrap-arounds), when tshark is installed.

Compared per stream (matched by addresses, ports and SSRC): packets, lost, Problems
(exact), start time, min/mean/max delta and min/mean/max jitter.
"""

from __future__ import annotations

import importlib.util
import math
import re
import shutil
import socket
import struct
import subprocess
from pathlib import Path

import dpkt
import numpy as np
import pytest

from qoe.rtp import scan_capture

DATA = Path(__file__).resolve().parents[2] / "data" / "voice" / "captures"
STORED = sorted(DATA.glob("*.tshark-rtp-streams.txt"))
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
# tshark prints ms with 3 decimals (exact to +-0.0005 ms), times in s with 6.
TOL_MS = 0.0006
TOL_S = 0.0000006

_ROW = re.compile(
    r"^\s*(?P<start>-?[\d.]+)\s+(?P<end>-?[\d.]+)\s+(?P<src>\S+)\s+(?P<sport>\d+)\s+(?P<dst>\S+)\s+(?P<dport>\d+)\s+"
    r"0x(?P<ssrc>[0-9A-Fa-f]+)\s+(?P<payload>.+?)\s+(?P<pkts>\d+)\s+(?P<lost>-?\d+) \([-\d.]+%\)\s+"
    r"(?P<min_d>[-\d.]+)\s+(?P<mean_d>[-\d.]+)\s+(?P<max_d>[-\d.]+)\s+"
    r"(?P<min_j>[-\d.]+)\s+(?P<mean_j>[-\d.]+)\s+(?P<max_j>[-\d.]+)\s*(?P<problem>X?)\s*$"
)


def parse_rtp_streams(text: str) -> dict[tuple, dict]:
    """Rows of tshark's ``-z rtp,streams`` table by (src, sport, dst, dport, ssrc)."""
    out = {}
    for line in text.splitlines():
        m = _ROW.match(line)
        if m:
            g = m.groupdict()
            out[(g["src"], int(g["sport"]), g["dst"], int(g["dport"]), int(g["ssrc"], 16))] = g
    return out


def assert_agree(tshark_text: str, capture: str | Path) -> int:
    """Every tshark stream has an equal qoe stream and vice versa; returns the count."""
    rows = parse_rtp_streams(tshark_text)
    scan = scan_capture(capture, keep_packets=False, min_packets=2, loss_rule="tshark")
    ours = {(s.key.src, s.key.sport, s.key.dst, s.key.dport, s.key.ssrc): s for s in scan.streams}
    assert set(ours) == set(rows), f"{capture}: streams differ"
    for key, g in rows.items():
        st = ours[key].stats
        where = f"{capture} {key}"
        assert (st.packets, st.lost, st.problems) == (int(g["pkts"]), int(g["lost"]), g["problem"] == "X"), where
        assert (st.first_ns - scan.first_ns) / 1e9 == pytest.approx(float(g["start"]), abs=TOL_S), where
        assert (st.min_delta_ms, st.mean_delta_ms, st.max_delta_ms) == pytest.approx(
            (float(g["min_d"]), float(g["mean_d"]), float(g["max_d"])), abs=TOL_MS), where
        if float(g["min_j"]) == -1.0:  # tshark: no clock rate, no jitter
            assert math.isnan(st.max_jitter_ms), where
        else:
            assert (st.min_jitter_ms, st.mean_jitter_ms, st.max_jitter_ms) == pytest.approx(
                (float(g["min_j"]), float(g["mean_j"]), float(g["max_j"])), abs=TOL_MS), where
    return len(rows)


def run_tshark(capture: str | Path, *extra: str) -> str:
    cmd = [TSHARK, "-r", str(capture), "-q", *extra, "-z", "rtp,streams"]
    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout


# ------------------------------------------------------------------------ real captures


@pytest.mark.skipif(not STORED, reason="no stored tshark outputs in data/voice/captures")
@pytest.mark.parametrize("stored", STORED, ids=[p.name.split(".tshark")[0] for p in STORED])
def test_stored_tshark_output(stored):
    text = stored.read_text()
    assert text.startswith("# command: tshark")
    capture = stored.with_name(stored.name[: -len(".tshark-rtp-streams.txt")])
    assert assert_agree(text, capture) >= 1


@needs_tshark
@pytest.mark.tshark
@pytest.mark.parametrize("stored", STORED, ids=[p.name.split(".tshark")[0] for p in STORED])
def test_live_tshark_on_real_captures(stored):
    command = stored.read_text().splitlines()[0].removeprefix("# command: ").split()
    assert command[0] == "tshark"
    out = subprocess.run([TSHARK, *command[1:]], cwd=stored.parent, capture_output=True, text=True, check=True,
                         timeout=120).stdout
    assert assert_agree(out, stored.parent / command[command.index("-r") + 1]) >= 1


# ------------------------------------------------------------------------ crafted captures


def _frame(src, sport, dst, dport, data):
    u = dpkt.udp.UDP(sport=sport, dport=dport, data=data)
    u.ulen = len(u)
    ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=17, data=u)
    ip.len = len(ip)
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=ip))


def _invite(dst, dport):
    """A SIP INVITE whose SDP offer asks for PCMA/CN at dst:dport (RFC 3261 §7, RFC 4566)."""
    body = (f"v=0\r\no=- 1 1 IN IP4 {dst}\r\ns=-\r\nc=IN IP4 {dst}\r\nt=0 0\r\n"
            f"m=audio {dport} RTP/AVP 8 13\r\na=rtpmap:8 PCMA/8000\r\na=rtpmap:13 CN/8000\r\n").encode()
    head = (f"INVITE sip:bob@{dst} SIP/2.0\r\nVia: SIP/2.0/UDP {dst}:5060;branch=z9hG4bK-1\r\n"
            f"From: <sip:alice@{dst}>;tag=1\r\nTo: <sip:bob@{dst}>\r\nCall-ID: crafted-1\r\nCSeq: 1 INVITE\r\n"
            f"Content-Type: application/sdp\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    return _frame("192.0.2.1", 5060, "198.51.100.2", 5060, head + body)


def _write_streams(path, streams, *, announce=False):
    """streams: list of (arrival_ns, seq, ts, pt, marker) column tuples, one SSRC each.

    With ``announce``, a SIP INVITE first offers the RTP port in SDP, so that both tshark
    and qoe take every SSRC on it for RTP whatever its sequence numbers look like.
    """
    recs = [(1_699_999_999 * 10**9, _invite("198.51.100.2", 5006))] if announce else []
    for k, (arr, seq, ts, pt, mk) in enumerate(streams):
        for a, s, t, p, m in zip(arr.tolist(), seq.tolist(), ts.tolist(), pt.tolist(), mk.tolist()):
            hdr = struct.pack("!BBHII", 0x80, (0x80 if m else 0) | p, s % 65536, t % 2**32, 0x1000 + k)
            recs.append((a + k * 1000, _frame("192.0.2.1", 5004, "198.51.100.2", 5006, hdr + b"\xd5" * 160)))
    recs.sort(key=lambda r: r[0])
    with open(path, "wb") as fh:
        w = dpkt.pcap.Writer(fh, nano=True)
        for a, b in recs:
            sec, ns = divmod(a, 10**9)
            w.writepkt(b, ts=sec + ns / 1e9)  # dpkt rounds to ns; arrivals chosen on whole µs
    return path


def _stats_module():
    spec = importlib.util.spec_from_file_location("_rtp_stats_cases", Path(__file__).with_name("test_rtp_stats.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@needs_tshark
@pytest.mark.tshark
def test_live_tshark_on_the_convention_cases(tmp_path):
    """The values copied into test_rtp_stats.py are what tshark prints today."""
    mod = _stats_module()
    tables = [mod._table(10, **kw) for _, kw, _, _ in mod.TSHARK_CASES]
    tables += [mod._table(len(seqs), seqs=seqs) for seqs, _ in mod.TSHARK_LOST]
    streams = [(p.arrival_ns, p.seq, p.timestamp, p.payload_type, p.marker) for p in tables]
    path = _write_streams(tmp_path / "cases.pcap", streams, announce=True)
    out = run_tshark(path)
    assert assert_agree(out, path) == len(tables)
    rows = parse_rtp_streams(out)
    for k, (_, _, delta, jitter) in enumerate(mod.TSHARK_CASES):
        g = rows[("192.0.2.1", 5004, "198.51.100.2", 5006, 0x1000 + k)]
        assert (float(g["min_d"]), float(g["mean_d"]), float(g["max_d"])) == pytest.approx(delta, abs=1e-9)
        assert (float(g["min_j"]), float(g["mean_j"]), float(g["max_j"])) == pytest.approx(jitter, abs=1e-9)
    for k, (_, lost) in enumerate(mod.TSHARK_LOST, start=len(mod.TSHARK_CASES)):
        assert int(rows[("192.0.2.1", 5004, "198.51.100.2", 5006, 0x1000 + k)]["lost"]) == lost


def _random_stream(rng):
    n = int(rng.integers(20, 400))
    seq0 = int(rng.choice([rng.integers(0, 65536), 65535 - rng.integers(0, n)]))
    ts0 = int(rng.choice([rng.integers(0, 2**32), 2**32 - 160 * rng.integers(0, n)]))
    noise_us = int(rng.choice([0, 1000, 10000, 50000]))
    idx = np.arange(n)
    arr = 1_700_000_000 * 10**9 + idx * 20_000_000 + rng.integers(0, noise_us + 1, n) * 1000
    seq, ts = seq0 + idx, ts0 + 160 * idx
    pt, mk = np.full(n, 8), np.zeros(n, dtype=bool)
    if rng.random() < 0.5:  # loss
        keep = rng.random(n) > rng.uniform(0, 0.3)
        arr, seq, ts, pt, mk = arr[keep], seq[keep], ts[keep], pt[keep], mk[keep]
    if rng.random() < 0.3:  # duplicates, later
        d = rng.random(arr.size) < 0.05
        arr = np.concatenate([arr, arr[d] + rng.integers(0, 100_000, d.sum()) * 1000])
        seq, ts, pt, mk = (np.concatenate([c, c[d]]) for c in (seq, ts, pt, mk))
    if rng.random() < 0.3:  # reordering
        arr = arr + (rng.random(arr.size) < 0.05) * rng.integers(20_000, 100_000, arr.size) * 1000
    if rng.random() < 0.3:
        mk = mk | (rng.random(arr.size) < 0.05)
    if rng.random() < 0.3:  # comfort noise
        pt = np.where(rng.random(arr.size) < 0.05, 13, pt)
    if rng.random() < 0.2:  # timestamps jumping back
        ts = ts - (rng.random(arr.size) < 0.03) * rng.integers(1, 2000, arr.size)
    if rng.random() < 0.2:  # a silence: timestamps jump 1 s, marker on the first
        k = int(rng.integers(0, arr.size))
        ts = ts + np.where(np.arange(arr.size) >= k, 8000, 0)
        mk = mk.copy()
        mk[k] |= rng.random() < 0.5
    order = np.argsort(arr, kind="stable")
    return tuple(c[order] for c in (arr, seq, ts, pt, mk))


@needs_tshark
@pytest.mark.tshark
def test_live_tshark_on_random_streams(tmp_path):
    rng = np.random.default_rng(20240601)
    streams = [_random_stream(rng) for _ in range(80)]
    path = _write_streams(tmp_path / "random.pcap", streams)
    assert assert_agree(run_tshark(path, "--enable-heuristic", "rtp_udp"), path) == 80
