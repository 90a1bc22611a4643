"""QUIC loss recovery from a capture (RFC 9002 §6) on the real HTTP/3 page loads of data/web/browser.

Truth, independent of qoe:

* ``h3-loss.drops.jsonl``: every packet the testbed's forwarder (tun_forwarder.py, in the router,
  after the client-side capture point) dropped: time, direction, ports, UDP payload length.
  An uplink drop passed the capture point (the client sent it); a downlink drop never reached it.
* tshark 4.0's decrypted view of the same capture, run live:
  ``tshark -n -r h3-loss.pcap -o tls.keylog_file:h3-loss.keylog -T fields -e frame.number
  -e frame.time_epoch -e udp.srcport -e udp.dstport -e udp.length -e quic.packet_number
  -e quic.stream.stream_id -e quic.stream.offset -e quic.stream.length -e quic.ack.largest_acknowledged
  -e quic.ack.first_ack_range -e quic.ack.gap -e quic.ack.ack_range -E occurrence=a -E aggregator=;``:
  STREAM frames whose offsets were seen before on that stream and direction (the repeated
  bytes), and the ACK frames.

Skipped when tshark is absent (the drop-log checks run without it).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from qoe.web import WebOptions, page_loads
from qoe.web.quic import quic_connections

CAPTURES = Path(__file__).resolve().parents[2] / "data" / "web" / "browser" / "captures"
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
APP = 2  # RFC 9000 §12.3: the application data packet number space


def _conns(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return quic_connections(CAPTURES / f"{name}.pcap", keylog=str(CAPTURES / f"{name}.keylog"))


@pytest.fixture(scope="module")
def loss_conns():
    return {c.client[1]: c for c in _conns("h3-loss")}


def _drops(name: str) -> list[dict]:
    rows = [json.loads(x) for x in (CAPTURES / f"{name}.drops.jsonl").read_text().splitlines() if x.strip()]
    return [r for r in rows if not r.get("summary")]


def _tshark_rows(name: str) -> list[list[str]]:
    cmd = [TSHARK, "-n", "-r", str(CAPTURES / f"{name}.pcap"), "-o", f"tls.keylog_file:{CAPTURES / f'{name}.keylog'}",
           "-T", "fields", "-e", "frame.number", "-e", "frame.time_epoch", "-e", "udp.srcport", "-e", "udp.dstport",
           "-e", "udp.length", "-e", "quic.packet_number", "-e", "quic.stream.stream_id", "-e", "quic.stream.offset",
           "-e", "quic.stream.length", "-e", "quic.frame_type", "-e", "quic.stream_data", "-E", "occurrence=a",
           "-E", "aggregator=;"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def test_downlink_drops_are_the_servers_lost_packets(loss_conns):
    """Each packet the forwarder dropped towards the client never passed the capture point: qoe
    finds it as the one missing number of that connection's server packets, declared lost by
    the rules (the client acknowledged 3 later ones: §6.1.1), and no other."""
    down = [d for d in _drops("h3-loss") if d["direction"] == "down"]
    assert len(down) == 3
    for port, c in loss_conns.items():
        dropped = sum(1 for d in down if d["dport"] == port)
        s = c.server_loss
        assert s.unseen_packets == dropped == 1
        assert [(sp, seen) for sp, _, seen in s.lost] == [(APP, False)] * dropped
        assert s.lost_packets == dropped and s.spurious_losses == 0
        assert s.skipped_packet_numbers == 0  # aioquic does not skip numbers


@needs_tshark
def test_uplink_drops_are_declared_lost_and_nothing_else_was_acknowledged(loss_conns):
    """The client's packets the forwarder dropped (found in the capture by port, UDP length and
    time: tshark's packet numbers) that carried application data are declared lost; every
    other packet declared lost was never acknowledged by the server (its packet number in no
    ACK frame of tshark's decrypted view): a loss by the rules, e.g. a 1-RTT packet the server
    could not open before the handshake was complete."""
    rows = _tshark_rows("h3-loss")
    up = [d for d in _drops("h3-loss") if d["direction"] == "up"]
    assert len(up) == 2
    dropped: dict[int, set[int]] = {}
    for d in up:
        frame = [r for r in rows if int(r[2]) == d["sport"] and int(r[4]) == d["payload"] + 8
                 and 0 <= d["time"] - float(r[1]) < 0.005]
        assert len(frame) == 1, d
        dropped.setdefault(d["sport"], set()).update(int(x) for x in frame[0][5].split(";"))
    acked = _acked_by_server("h3-loss")
    for port, c in loss_conns.items():
        lost = {pn for sp, pn, seen in c.client_loss.lost if sp == APP}
        assert all(seen for _, _, seen in c.client_loss.lost)  # the near side: every packet passed
        if port in dropped:
            assert lost & dropped[port], port
        for pn in lost:
            assert pn in dropped.get(port, set()) or pn not in acked[port], (port, pn)
    assert loss_conns[38203].client_loss.lost == ((APP, 12, True),)  # the dropped 31-byte packet
    assert {5, 6} == {pn for _, pn, _ in loss_conns[43186].client_loss.lost}  # 5 dropped; 6 never acknowledged


def _acked_by_server(name: str) -> dict[int, set[int]]:
    """Client packet numbers in the server's ACK frames, per client port (tshark's fields)."""
    cmd = [TSHARK, "-n", "-r", str(CAPTURES / f"{name}.pcap"), "-o", f"tls.keylog_file:{CAPTURES / f'{name}.keylog'}",
           "-Y", "udp.srcport==443 && quic.frame_type==2", "-T", "fields", "-e", "udp.dstport",
           "-e", "quic.ack.largest_acknowledged", "-e", "quic.ack.first_ack_range", "-e", "quic.ack.gap",
           "-e", "quic.ack.ack_range", "-E", "occurrence=a", "-E", "aggregator=;"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout
    acked: dict[int, set[int]] = {}
    for line in out.splitlines():
        port, largest, first, gaps, ranges = (line.split("\t") + [""] * 5)[:5]
        got = acked.setdefault(int(port), set())
        lg, fr = largest.split(";"), first.split(";")
        gl, rl = [int(x) for x in gaps.split(";") if x], [int(x) for x in ranges.split(";") if x]
        # RFC 9000 §19.3.1: ranges go down from the largest; gaps and ranges of all ACK frames of
        # the packet are listed together, so only the first range of each frame is used when
        # there are several frames (their extra ranges fall below the first range)
        for k, (a, f) in enumerate(zip(lg, fr)):
            hi = int(a)
            lo = hi - int(f)
            got.update(range(lo, hi + 1))
            if len(lg) == 1:
                for g, r in zip(gl, rl):
                    hi = lo - g - 2
                    lo = hi - r
                    got.update(range(lo, hi + 1))
    return acked


@needs_tshark
def test_repeated_stream_offsets_equal_tshark(loss_conns):
    """Per connection and sender: the STREAM bytes qoe says were sent again over a copy that
    passed the capture point equal the bytes of tshark's STREAM frames at offsets seen before
    on that stream and direction (frame order)."""
    rows = _tshark_rows("h3-loss")
    want: dict[tuple[int, str], int] = {}
    seen: dict[tuple[int, str, int], list[tuple[int, int]]] = {}
    for r in rows:
        if len(r) < 10 or not r[6]:
            continue
        client_port = int(r[2]) if int(r[3]) == 443 else int(r[3])
        side = "client" if int(r[3]) == 443 else "server"
        # tshark lists a field only where the frame has it: align by the frame types (RFC 9000
        # §19.8: STREAM 0x08-0x0f, OFF bit 0x04 (else offset 0), LEN bit 0x02)
        # §19.8: STREAM 0x08-0x0f, OFF bit 0x04 (else offset 0), LEN bit 0x02 (else to the end of
        # the packet: its length from the frame's data, which tshark gives for non-empty frames)
        sids, offs, lens, datas = (iter(x.split(";")) if x else iter(()) for x in (r + [""])[6:9] + [(r + [""])[10]])
        for ft in (int(x) for x in r[9].split(";")):
            if not 0x08 <= ft <= 0x0F:
                continue
            sid, a = next(sids), int(next(offs)) if ft & 0x04 else 0
            n = int(next(lens)) if ft & 0x02 else len(next(datas).replace(":", "")) // 2
            if ft & 0x02 and n:
                next(datas)
            b = a + n
            got = seen.setdefault((client_port, side, int(sid)), [])
            rep = sum(max(0, min(b, y) - max(a, x)) for x, y in _union(got))
            want[(client_port, side)] = want.get((client_port, side), 0) + rep
            got.append((a, b))
    for port, c in loss_conns.items():
        for loss in (c.client_loss, c.server_loss):
            mine = sum(e.length for e in loss.retransmission_events if e.stream_id is not None and e.original_seen)
            assert mine == want.get((port, loss.direction), 0), (port, loss.direction)
    assert want[(43186, "client")] == 494 and want[(43186, "server")] == 1166  # the numbers, for the record


def _union(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def test_bytes_of_the_downlink_drops_are_sent_again(loss_conns):
    """The two dropped server packets that carried data (1200 and 849 bytes of UDP payload in the
    drop log) come back as retransmissions whose first copy never passed the capture point,
    of about their size (payload less headers and other frames); the 25-byte drop (an ACK)
    carried nothing to send again."""
    sizes = {d["dport"]: d["payload"] for d in _drops("h3-loss") if d["direction"] == "down"}
    for port, c in loss_conns.items():
        unseen = sum(e.length for e in c.server_loss.retransmission_events if not e.original_seen)
        if sizes[port] < 100:
            assert unseen == 0
        else:
            assert sizes[port] - 60 <= unseen <= sizes[port], (port, unseen)
        assert all(not e.spurious for e in c.server_loss.retransmission_events if not e.original_seen)


def test_pto_probe_after_the_dropped_handshake(loss_conns):
    """The client's datagram with its Handshake Finished was dropped: the client's next packet
    re-sent those bytes before any ACK came back, a probe (RFC 9002 §6.2.4): one PTO event, and
    the Handshake CRYPTO bytes sent again."""
    c = loss_conns[43186].client_loss
    assert c.pto_events == 1
    (start, probe), = c.pto_intervals
    crypto = [e for e in c.retransmission_events if e.stream_id is None]
    assert [(e.space, e.ts_ns) for e in crypto] == [(1, probe)] and c.retransmitted_crypto_bytes == 52
    assert start < probe


def test_no_loss_on_the_delay_capture():
    """h3-delay (no drop in its drop log): nothing declared lost, no PTO, no bytes sent again."""
    assert [d for d in _drops("h3-delay")] == []
    for c in _conns("h3-delay"):
        for loss in (c.client_loss, c.server_loss):
            assert loss.lost_packets == loss.pto_events == loss.retransmissions == loss.unseen_packets == 0
            assert loss.packets > 0


def test_h3_page_loss_share_on_the_tcp_footing():
    """The h3 pages now have a loss_share, defined as TCP's: the loss capture's is in (0, 1) with a
    wait from its retransmissions, the delay capture's 0."""
    def page(name):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (p,) = page_loads(CAPTURES / f"{name}.pcap", options=WebOptions(keylog=str(CAPTURES / f"{name}.keylog")))
        return p

    lossy, clean = page("h3-loss"), page("h3-delay")
    assert 0 < lossy.loss_wait_s < lossy.plt_s and 0 < lossy.loss_share < 1 and lossy.retransmissions > 0
    assert clean.loss_wait_s == 0 and clean.loss_share == 0 and clean.retransmissions == 0
    assert any("RFC 9002 §6" in n for n in lossy.notes)
    assert not math.isnan(lossy.loss_share)


def test_without_keys_no_loss_recovery():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conns = quic_connections(CAPTURES / "h3-loss.pcap")
        (p,) = page_loads(CAPTURES / "h3-loss.pcap")
    assert all(c.client_loss is None and c.server_loss is None for c in conns)
    assert math.isnan(p.loss_share)
