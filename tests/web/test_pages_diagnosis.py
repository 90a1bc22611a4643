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

from qoe.web import WebOptions, page_loads

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
