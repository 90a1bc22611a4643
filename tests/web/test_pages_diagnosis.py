"""The seed paper's diagnosis on the page's critical path, partial notes and protocols (issue 22).

Captures: data/web/captures (made by data/web/make_samples.sh: wget/curl through the tbf
bottleneck, idle and with bulk up/down load; ``_server`` files are the server side's capture
of the same load). Reference values: tshark's ``tcp.analysis.retransmission`` frames on the
same file (``tshark -r FILE -Y tcp.analysis.retransmission -T fields -e frame.time_epoch``).
"""

from __future__ import annotations

import glob
import math
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from qoe.web import WebOptions, build_pages, page_loads
from qoe.web.http import connection_results
from qoe.web.pages import dns_queries
from qoe.web.tcp import connections

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = sorted(glob.glob(str(ROOT / "data" / "web" / "**" / "*.pcap"), recursive=True))
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def pages(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (captures cut short say so; not what is tested here)
        return page_loads(path, **kw)


def retransmission_times(path) -> list[float]:
    out = subprocess.run(["tshark", "-r", str(path), "-Y", "tcp.analysis.retransmission", "-T", "fields",
                          "-e", "frame.time_epoch"], capture_output=True, text=True, check=True, timeout=120).stdout
    return [float(x) for x in out.split()]


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: Path(p).name)
def test_shares_stay_in_0_1_and_notes_say_why(path):
    found = pages(path)
    assert found, "a web capture with no page"
    for p in found:
        for share in (p.rtt_share, p.loss_share):
            assert math.isnan(share) or 0 <= share <= 1, (p.index, p.rtt_share, p.loss_share)
        assert 0 <= p.loss_wait_s <= p.plt_s + 1e-9
        if math.isfinite(p.rtt_component_s):
            assert p.rtt_component_s + p.loss_wait_s <= p.plt_s + 1e-9
        assert p.rtt_baseline == "page minimum" and (p.rtt_baseline_s == p.rtt_min_s or math.isnan(p.rtt_min_s))
        for note in p.notes:  # a note always says why: "partial: <reason>", never "partial: "
            if note.startswith("partial:"):
                assert note[len("partial:"):].strip(), p.notes
        # named as far as the capture shows it ("http"/"TLS": heads or hellos cut by the snap length)
        # (QUIC-only captures, data/web/browser/h3-*: "QUIC (ALPN offered: h3)" without keys, qoe.web.quic)
        assert p.protocol in {"http", "http/1.0", "http/1.1"} or p.protocol.startswith(("TLS", "QUIC")), p.protocol


@needs_tshark
def test_retransmissions_after_the_page_are_not_its_loss():
    # The server-side capture of a download under load: the page ends with the request (the
    # response could not be parsed there), and every retransmission tshark flags comes later;
    # summing the connection's waits counted 1.04 s of loss on a 12 ms page (share 195).
    path = ROOT / "data/web/captures/http11-down-b8-curl_server.pcap"
    (p,) = pages(path)
    later = retransmission_times(path)
    assert later and min(later) * 1e9 > p.end_ns
    assert p.retransmissions >= len(later) // 2  # the connection's own count still reports them
    assert p.loss_wait_s == 0 and p.loss_share == 0 and p.diagnosis != "loss-dominated"


@needs_tshark
def test_loss_on_the_critical_path_is_counted():
    # the client side of the same kind of load: tshark flags retransmissions inside the page
    path = ROOT / "data/web/captures/http11-down-b8-curl_client.pcap"
    (p,) = pages(path)
    inside = [t for t in retransmission_times(path) if p.start_ns <= t * 1e9 <= p.end_ns]
    assert len(inside) >= 5
    assert 0.5 * p.plt_s < p.loss_wait_s <= p.plt_s and p.diagnosis == "loss-dominated"
    assert 0.5 <= p.loss_share <= 1


def test_parallel_connections_under_bufferbloat_keep_the_rtt_share_at_most_1():
    # four HTTP/1.0 connections in a full uplink buffer (256 packets): 11 round trips at the
    # median RTT (0.73 s) would be 8.0 s, longer than the 7.2 s page: the component is capped
    (p,) = pages(ROOT / "data/web/captures/http10-up-b64-wget_client.pcap")
    assert p.connections == 4 and p.round_trips * p.rtt_s > p.plt_s
    assert p.rtt_share == pytest.approx(1.0) and p.diagnosis == "rtt-dominated"
    assert any(n.startswith("RTT component capped") for n in p.notes)


def test_a_given_rtt_baseline_is_stated_and_used():
    path = ROOT / "data/web/captures/http11-up-b8-wget_client.pcap"
    (p,) = pages(path)
    (g,) = pages(path, options=WebOptions(base_rtt_s=0.04))
    assert (g.rtt_baseline, g.rtt_baseline_s) == ("given", 0.04) and p.rtt_baseline == "page minimum"
    # a lower baseline makes the loss-free time shorter: the same wait is a smaller share of a larger increase
    assert g.loss_wait_s == p.loss_wait_s and g.loss_share <= p.loss_share


@needs_tshark
def test_an_https_page_names_its_tls_version_and_the_alpn_offered():
    # reference: tshark's ClientHello ALPN list and ServerHello supported_version
    path = ROOT / "data/web/captures/https11-idle-b64-curl_client.pcap"
    out = subprocess.run(["tshark", "-r", str(path), "-Y", "tls.handshake.type==1 || tls.handshake.type==2",
                          "-T", "fields", "-e", "tls.handshake.type", "-e", "tls.handshake.extensions.supported_version",
                          "-e", "tls.handshake.extensions_alpn_str"], capture_output=True, text=True, check=True).stdout
    rows = [line.split("\t") for line in out.splitlines()]
    offered = next(r[2] for r in rows if r[0] == "1")
    chosen = next(r[1] for r in rows if r[0] == "2")
    assert chosen == "0x0304"  # TLS 1.3: the chosen ALPN is in EncryptedExtensions
    (p,) = pages(path)
    assert p.protocol == f"TLS 1.3 (ALPN offered: {offered})"
    assert any("ALPN) is encrypted" in n for n in p.notes)


def _with_late_handshake(src: Path, dst: Path, *, conn_port: int, delay_s: float) -> None:
    """``src`` with the connection from client port ``conn_port`` answered ``delay_s`` late: its
    SYN is sent at its original time and again 1 s later (both lost in a full buffer, RFC 6298
    §5.5 doubling), then the original SYN and everything after it ``delay_s`` later."""
    import dpkt

    with open(src, "rb") as f:
        r = dpkt.pcap.Reader(f)
        link, snap, packets = r.datalink(), r.snaplen, list(r)
    out, shift, syn = [], 0.0, None
    for ts, buf in packets:
        ip = dpkt.ethernet.Ethernet(buf).data if link == dpkt.pcap.DLT_EN10MB else None
        tcp = ip.data if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP) else None
        if syn is None and tcp is not None and tcp.sport == conn_port and tcp.flags & dpkt.tcp.TH_SYN:
            syn = ts
            out += [(ts, buf), (ts + 1.0, buf)]  # the two lost attempts
            shift = delay_s
        out.append((ts + shift, buf))
    assert syn is not None, f"no SYN from port {conn_port} in {src}"
    with open(dst, "wb") as f:
        w = dpkt.pcap.Writer(f, snaplen=snap, linktype=link)
        for ts, buf in sorted(out, key=lambda p: p[0]):
            w.writepkt(buf, ts=ts)


@needs_tshark
def test_retransmitted_syns_of_the_next_connection_keep_one_page(tmp_path):
    # a page of four HTTP/1.0 objects (one connection each); the third connection's handshake
    # waits 3 s (SYNs lost): its request starts more than idle_gap_s (2 s) after the second
    # object's last byte, yet the handshake was under way: one page, not two
    src = ROOT / "data/web/captures/http10-idle-b64-wget_client.pcap"
    path = tmp_path / "late_syn.pcap"
    _with_late_handshake(src, path, conn_port=41928, delay_s=3.0)
    out = subprocess.run(["tshark", "-r", str(path), "-Y", "tcp.flags.syn==1 && tcp.flags.ack==0 && "
                          "tcp.analysis.retransmission", "-T", "fields", "-e", "tcp.srcport"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["41928", "41928"]  # tshark: two SYN retransmissions on that connection
    (before,) = pages(src)
    found = pages(path)
    assert len(found) == 1, [(p.url, p.plt_s) for p in found]
    (p,) = found
    assert p.objects == before.objects == 4 and p.plt_s == pytest.approx(before.plt_s + 3.0, abs=1e-3)
    assert p.retransmissions == before.retransmissions + 2
    # the batch path (build_pages on the same parts) groups it the same way
    results = connection_results(path)
    batch = build_pages([t for r in results for t in r.transactions], connections=connections(path),
                        tls=[r.tls for r in results if r.tls is not None], dns=dns_queries(path))
    assert [(b.objects, b.plt_s) for b in batch] == [(p.objects, p.plt_s)]


@pytest.mark.parametrize("name", [
    "browser/captures/h1-loss", "browser/captures/h1-up", "browser/captures/h1-up-b256",
    "browser/captures/tls13-loss", "browser/captures/h2-loss", "browser/captures/h2-up-b256",
    "captures/http11-down-b8-curl_client", "captures/http11-up-b8-wget_client",
])
def test_streamed_pages_equal_the_batch_pages_of_whole_connections(name):
    # the streaming pass keeps of each TCP connection only what the page model reads (RTT
    # figures, retransmissions and stalls, FIN/RST times), in one process and split between
    # two: its pages (RTT, loss waits, retransmissions, diagnosis: every field) are the ones
    # build_pages makes from the whole qoe.web.tcp.Connection records. Browser and curl/wget
    # loads with loss, standing queues whose tail losses show as stalls (the last three), and
    # TLS without keys (data/web).
    path = ROOT / "data/web" / f"{name}.pcap"
    results = connection_results(path)
    batch = build_pages([t for r in results for t in r.transactions], connections=connections(path),
                        tls=[r.tls for r in results if r.tls is not None and not r.transactions],
                        dns=dns_queries(path))
    assert batch and sum(p.retransmissions for p in batch) > 0
    for ahead in (False, True):
        streamed = page_loads(path, options=WebOptions(read_ahead=ahead))
        assert [p.to_record() for p in streamed] == [p.to_record() for p in batch]
