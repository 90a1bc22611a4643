"""QUIC v1 and HTTP/3 from a real capture, checked against tshark and the client's own log.

data/web/tls/quic-h3.pcapng: aioquic's HTTP/3 client fetching 6 objects from aioquic's server
on loopback (data/web/tls/make_quic.sh; key log quic-h3.keylog; the client's log of status and
body size per path: quic-h3.client.tsv). References, run live:

* packets: ``tshark -o tls.keylog_file:K -r F -T fields -e frame.time_epoch -e udp.srcport
  -e quic.long.packet_type -e quic.header_form -e quic.frame_type -E occurrence=a``
  (header_form 1 = long header; frame type 30 = HANDSHAKE_DONE)
* hellos: ``tshark -r F -Y "tls.handshake.type==1 or tls.handshake.type==2" -T fields
  -e tls.handshake.extensions_server_name -e tls.handshake.extensions_alpn_str -e tls.handshake.ciphersuite``
* HTTP/3 frames per stream (tshark 4.0 does not decode QPACK): ``-Y http3 -T fields
  -e quic.stream.stream_id -e http3.frame_type``

Skipped when tshark is absent (the client-log checks run without it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from qoe.capture import read_packets
from qoe.web.keylog import KeyLog, read_keylog
from qoe.web.quic import quic_connections

TLS = Path(__file__).resolve().parents[2] / "data" / "web" / "tls"
CAP = TLS / "quic-h3.pcapng"
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")


def tshark(*args: str) -> list[list[str]]:
    cmd = [TSHARK, "-n", "-r", str(CAP), "-o", f"tls.keylog_file:{TLS / 'quic-h3.keylog'}", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def ns(text: str) -> int:
    sec, _, frac = text.partition(".")
    return int(sec) * 10**9 + int((frac + "000000000")[:9])


@pytest.fixture(scope="module")
def with_keys():
    (c,) = quic_connections(CAP, keylog=read_keylog(TLS / "quic-h3.keylog"))
    return c


@pytest.fixture(scope="module")
def without_keys():
    (c,) = quic_connections(CAP)
    return c


@needs_tshark
def test_handshake_timing_without_keys_equals_tshark(without_keys):
    c = without_keys
    rows = tshark("-T", "fields", "-e", "frame.time_epoch", "-e", "udp.srcport", "-e", "quic.long.packet_type",
                  "-e", "quic.header_form", "-E", "occurrence=a")
    firsts: dict[tuple[str, str], int] = {}
    for t, port, ltypes, forms in rows:
        side = "client" if int(port) == c.client[1] else "server"
        for form, kind in zip(forms.split(","), ltypes.split(",") + ["1rtt"] * 8):
            name = {"0": "initial", "2": "handshake"}.get(kind, "1rtt") if form == "1" else "1rtt"
            firsts.setdefault((side, name), ns(t))
    assert c.client_initial_ns == firsts[("client", "initial")] == c.first_ns
    assert c.server_initial_ns == firsts[("server", "initial")]
    assert c.client_handshake_ns == firsts[("client", "handshake")]
    assert c.server_handshake_ns == firsts[("server", "handshake")]
    assert c.client_first_1rtt_ns == firsts[("client", "1rtt")]
    assert c.server_first_1rtt_ns == firsts[("server", "1rtt")]
    assert c.client_packets + c.server_packets == len(rows)
    # without keys: the client's first 1-RTT packet ends the handshake, objects are not visible
    assert c.handshake_end_ns == c.client_first_1rtt_ns
    assert not c.keys_found and not c.decrypted and c.transactions == ()
    assert "not visible" in c.note


@needs_tshark
def test_hellos_are_read_from_the_initial_packets_alone(without_keys):
    (sni, alpn, _), (_, _, suite) = tshark("-Y", "tls.handshake.type==1 or tls.handshake.type==2", "-T", "fields",
                                           "-e", "tls.handshake.extensions_server_name", "-e",
                                           "tls.handshake.extensions_alpn_str", "-e", "tls.handshake.ciphersuite")
    assert without_keys.server_name == sni
    assert without_keys.alpn_offered == tuple(alpn.split(","))
    assert without_keys.cipher_suite is not None and int(suite, 16) == 0x1302
    assert without_keys.cipher_suite == "AES_256_GCM_SHA384"


def test_bursts_cover_every_1rtt_packet(without_keys, with_keys):
    c = without_keys
    assert sum(b.records for b in c.bursts) > 0
    assert all(a.direction != b.direction for a, b in zip(c.bursts, c.bursts[1:]))
    assert [b.to_dict() for b in c.bursts] == [b.to_dict() for b in with_keys.bursts]  # keys change nothing there


@needs_tshark
def test_with_keys_every_packet_opens_and_handshake_done_is_seen(with_keys):
    c = with_keys
    assert c.keys_found and c.decrypted
    assert c.client_failed_packets == c.server_failed_packets == 0
    assert c.alpn == "h3"
    done = [ns(t) for t, ftypes in tshark("-T", "fields", "-e", "frame.time_epoch", "-e", "quic.frame_type",
                                            "-E", "occurrence=a") if "30" in ftypes.split(",")]
    assert c.handshake_done_ns == done[0] == c.handshake_end_ns
    assert c.handshake_ns == c.handshake_done_ns - c.client_initial_ns
    assert c.note is None


def test_http3_transactions_equal_the_client_log(with_keys):
    log = [line.split("\t") for line in (TLS / "quic-h3.client.tsv").read_text().splitlines()]
    got = [(t.target, t.status, t.response_body_bytes) for t in with_keys.transactions]
    assert got == [(p, int(s), int(n)) for p, s, n in log]
    methods = [t.method for t in with_keys.transactions]
    assert methods == ["GET"] * 5 + ["HEAD"]
    for t in with_keys.transactions:
        assert t.protocol == "h3" and t.complete and t.url == f"https://www.example.com{t.target}"
        assert t.request_start_ns <= t.request_end_ns <= t.response_start_ns <= t.response_end_ns


@needs_tshark
def test_http3_streams_and_frames_equal_tshark(with_keys):
    # request streams (client-initiated bidirectional, id % 4 == 0) and their HEADERS/DATA frames
    frames: dict[int, list[str]] = {}
    for sids, ftypes in tshark("-Y", "http3", "-T", "fields", "-e", "quic.stream.stream_id", "-e", "http3.frame_type",
                               "-E", "occurrence=a"):
        if not ftypes:
            continue
        sid_list, ft_list = sids.split(","), ftypes.split(",")
        if len(sid_list) == len(ft_list):
            for s, f in zip(sid_list, ft_list):
                frames.setdefault(int(s), []).append(f)
    request_streams = sorted(s for s in frames if s % 4 == 0)
    assert [t.stream_id for t in with_keys.transactions] == request_streams


def test_wrong_keys_are_counted_not_raised():
    good = read_keylog(TLS / "quic-h3.keylog")
    bad = KeyLog({k: bytes(b ^ 0xFF for b in v) for k, v in good.secrets.items()})
    (c,) = quic_connections(CAP, keylog=bad)
    assert c.keys_found and c.client_failed_packets + c.server_failed_packets > 0
    assert c.transactions == () and "failed authentication" in c.note


@pytest.mark.parametrize("name", ["quic-h3.pcapng", "../browser/captures/h3-loss.pcap"])
def test_a_file_and_its_packets_give_the_same_connections(name):
    """quic_connections reads a file's UDP datagrams with the columnar reader, and takes
    packets already read as they come: the connections (and their HTTP/3 transactions with
    the keys) are the same either way."""
    cap = TLS / name
    keylog = cap.with_suffix(".keylog")
    from_file = quic_connections(cap, keylog=keylog)
    from_packets = quic_connections(list(read_packets(cap)), keylog=keylog)
    assert from_file and [c.to_dict() for c in from_file] == [c.to_dict() for c in from_packets]
    assert any(c.transactions for c in from_file)


def test_datagrams_within_given_times_are_those_read():
    """iter_quic_connections(..., times=spans) on a file gives what it gives on the file's
    packets captured within the spans (read_packets, filtered by time here): the first half
    of Chromium's HTTP/3 load with loss, decrypted, and a span that holds nothing; bad spans
    are refused."""
    from qoe.errors import QoEError
    from qoe.web.quic import iter_quic_connections

    cap = TLS / "../browser/captures/h3-loss.pcap"
    keylog = cap.with_suffix(".keylog")
    packets = list(read_packets(cap))
    ts = sorted(p.ts_ns for p in packets if p.proto == 17)
    spans = [(ts[0], ts[len(ts) // 2])]
    kept = [p for p in packets if spans[0][0] <= p.ts_ns <= spans[0][1]]
    want = [c.to_dict() for c in iter_quic_connections(kept, keylog=keylog)]
    whole = [c.to_dict() for c in iter_quic_connections(cap, keylog=keylog)]
    assert want and want != whole
    assert [c.to_dict() for c in iter_quic_connections(cap, keylog=keylog, times=spans)] == want
    assert [c.to_dict() for c in iter_quic_connections(packets, keylog=keylog, times=spans)] == want
    assert list(iter_quic_connections(cap, keylog=keylog, times=[(0, ts[0] - 1)])) == []
    with pytest.raises(QoEError, match="times must be"):
        iter_quic_connections(cap, times=[(5, 1)])


def test_memory_does_not_grow_with_a_capture_of_many_quic_connections(tmp_path):
    """Copies of Chromium's HTTP/3 page load (``tests/big_capture.py``: each from its own
    client address, 50 ms apart), 30 and then 150 of them, decrypted with the page's key
    log: every copy's connections and 41 transactions, and the peak resident memory of the reading process
    the same on both (measured in a fresh interpreter each). Before, a connection whose
    addresses did not come back stayed whole to the end of the capture, and the datagrams
    were read in batches of 65,536 (the whole 20 MB capture at once): 79 and 188 MB;
    after, 68 and 68 MB."""
    from fresh_python import run_fresh  # tests/fresh_python.py

    from big_capture import write

    keys = Path(__file__).resolve().parents[2] / "data" / "web" / "browser" / "captures" / "h3-idle.keylog"
    one = quic_connections(keys.with_suffix(".pcap"), keylog=keys)  # the sample itself
    assert sum(len(q.transactions) for q in one) == 41
    peaks = []
    for copies in (30, 150):
        cap = tmp_path / f"quic{copies}.pcap"
        write(cap, "quic", copies=copies)
        out = run_fresh('''
            import resource, sys, warnings
            from qoe.web.quic import iter_quic_connections
            warnings.simplefilter("ignore")
            n = [len(q.transactions) for q in iter_quic_connections(sys.argv[1], keylog=sys.argv[2])]
            print(len(n), sum(n), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        ''', cap, keys)
        conns, transactions, rss_kb = map(int, out.split())
        assert (conns, transactions) == (copies * len(one), copies * sum(len(q.transactions) for q in one))
        peaks.append(rss_kb / 1024)
        cap.unlink()
    assert peaks[1] - peaks[0] < 10, f"peak RSS {peaks[0]:.0f} MB with 30 copies, {peaks[1]:.0f} MB with 150"


@pytest.mark.skipif(not (sys.platform.startswith("linux") and hasattr(os, "memfd_create")),
                    reason="read_ahead reads in a child process on Linux only")
def test_connections_read_half_in_a_child_are_the_same(tmp_path):
    """``quic_connections(read_ahead=True)``: the odd-numbered connections read whole in a child
    process, the even ones here, every datagram followed by both: the same connections, equal
    field by field, as one pass gives (40 copies of Chromium's HTTP/3 page load, three QUIC
    connections each, one copy cut short at the end of the file)."""
    from fresh_python import run_fresh  # tests/fresh_python.py

    from big_capture import write

    keys = Path(__file__).resolve().parents[2] / "data" / "web" / "browser" / "captures" / "h3-idle.keylog"
    cap = tmp_path / "quic.pcap"
    write(cap, "quic", copies=40)
    data = cap.read_bytes()
    cap.write_bytes(data[: len(data) - 50_000])  # the last copy cut short
    out = run_fresh('''
        import resource, sys, warnings
        from qoe.web.quic import quic_connections
        warnings.simplefilter("ignore")
        plain = quic_connections(sys.argv[1], keylog=sys.argv[2])
        assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss == 0
        split = quic_connections(sys.argv[1], keylog=sys.argv[2], read_ahead=True)
        assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss > 0  # a child read half
        assert split == plain
        print(len(plain), sum(len(c.transactions) for c in plain))
    ''', cap, keys)
    conns, transactions = map(int, out.split())
    assert 39 * 3 <= conns <= 40 * 3 and 39 * 41 <= transactions < 40 * 41  # the cut copy: what it holds


@pytest.mark.parametrize("bad", [1, "yes"])
def test_read_ahead_of_quic_connections_is_true_false_or_none(bad):
    from qoe.errors import InputError

    with pytest.raises(InputError, match="read_ahead must be True, False or None"):
        quic_connections(CAP, read_ahead=bad)


@needs_tshark
def test_a_retry_is_followed_and_the_handshake_read_from_the_client_s_next_initial(with_keys):
    """quic-h3-retry.pcapng (make_quic.sh retry: aioquic's server validating addresses, RFC 9000
    §8.1.2): the server answers the first Initial with a Retry (long header type 3, tshark), the
    client begins again under the Retry's connection ID with a new ClientHello (aioquic makes a
    new random; the key log names that one). qoe read the first ClientHello's random, found no
    secrets and no object; now its three objects are the client's log. (tshark 4.0.17 takes the
    first ClientHello too: it opens none of the 1-RTT packets.)"""
    cap, keylog = TLS / "quic-h3-retry.pcapng", TLS / "quic-h3-retry.keylog"
    cmd = [TSHARK, "-n", "-r", str(cap), "-o", f"tls.keylog_file:{keylog}", "-Y", "quic", "-T", "fields",
           "-e", "frame.time_epoch", "-e", "quic.long.packet_type", "-e", "tls.handshake.random"]
    rows = [x.split("\t") for x in subprocess.run(cmd, capture_output=True, text=True, check=True,
                                                  timeout=60).stdout.splitlines()]
    assert rows[1][1] == "3"  # the server's Retry, after the client's first Initial
    first_random = bytes.fromhex(rows[0][2])
    log = read_keylog(keylog)
    assert not log.has_client(first_random) and len({cr for _, cr in log.secrets}) == 1
    (c,) = quic_connections(cap, keylog=log)
    assert c.retry and not with_keys.retry and c.note is None
    assert c.client_initial_ns == ns(rows[0][0]) and c.client_failed_packets == c.server_failed_packets == 0
    client = [line.split("\t") for line in (TLS / "quic-h3-retry.client.tsv").read_text().splitlines()]
    assert [(t.target, t.status, t.response_body_bytes) for t in c.transactions] == \
        [(p, int(s), int(n)) for p, s, n in client]
