"""TLS 1.3 decryption through a HelloRetryRequest and with 0-RTT early data, on real captures.

data/web/tls/tls13-hrr.pcap and tls13-0rtt.pcap: OpenSSL 3.0's s_client against its s_server
(data/web/tls/make_hrr_0rtt.sh; the key logs are s_client's ``-keylogfile``). Truth:

* HelloRetryRequest: tshark 4.0 (``tshark -r tls13-hrr.pcap -T fields -e tls.handshake.type
  -e tls.handshake.random -e tls.handshake.extensions_key_share_group``) shows two ClientHellos
  and a ServerHello with RFC 8446 §4.1.3's HRR random; s_client printed the response it got
  (``tls13-hrr.client.txt``: "HTTP/1.0 200 ok" and s_server's status page).
* 0-RTT: s_client printed "Early data was accepted" for the resumed connection and s_server
  "Early data received:" with the request (``tls13-0rtt.client.txt``, ``tls13-0rtt.server.txt``);
  tshark's decrypted view (``-o tls.keylog_file:tls13-0rtt.keylog -Y http -T fields
  -e frame.time_epoch -e tcp.stream -e http.request.method``) gives each request's time.

Skipped when tshark is absent (the checks against the OpenSSL logs run without it).
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from qoe.web.http import connection_results

TLS = Path(__file__).resolve().parents[2] / "data" / "web" / "tls"
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
HRR_RANDOM = "cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c"  # RFC 8446 §4.1.3


def _results(name: str, keylog: Path | None = None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return connection_results(TLS / f"{name}.pcap", keylog=str(keylog or TLS / f"{name}.keylog"))


def _tshark(name: str, *args: str) -> list[list[str]]:
    cap = TLS / f"{name}.pcap"
    cap = cap if cap.exists() else cap.with_suffix(".pcapng")
    cmd = [TSHARK, "-n", "-r", str(cap), "-o", f"tls.keylog_file:{TLS / f'{name}.keylog'}", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def _ns(text: str) -> int:
    sec, _, frac = text.partition(".")
    return int(sec) * 10**9 + int((frac + "000000000")[:9])


@needs_tshark
def test_hello_retry_request_is_in_the_capture():
    rows = [[x.split(",")[0] for x in r] for r in _tshark(
        "tls13-hrr", "-Y", "tls.handshake.type==1 or tls.handshake.type==2", "-T", "fields", "-e", "tls.handshake.type",
        "-e", "tls.handshake.random", "-e", "tls.handshake.extensions_key_share_group")]  # (first message of a record)
    assert [(t, r == HRR_RANDOM) for t, r, _ in rows] == [("1", False), ("2", True), ("1", False), ("2", False)]
    assert rows[0][1] == rows[2][1]  # the second ClientHello keeps the random: one key log entry
    assert rows[0][2] == "29" and rows[2][2] == "24"  # X25519 first, then the server's secp384r1


def test_decryption_through_a_hello_retry_request():
    """The second ClientHello and the real ServerHello set up the keys: every record opens, and
    the response is the one s_client printed (s_server's status page, ending in an empty line)."""
    (r,) = _results("tls13-hrr")
    assert r.tls.hello_retry and r.decryption.decrypted
    assert r.decryption.client_failed_records == r.decryption.server_failed_records == 0
    assert r.decryption.cipher_suite == "TLS_AES_256_GCM_SHA384"
    printed = (TLS / "tls13-hrr.client.txt").read_bytes()
    head = printed.index(b"HTTP/1.0 200 ok")
    body = printed.index(b"\r\n\r\n", head) + 4
    end = printed.index(b"</HTML>\r\n\r\n", body) + len(b"</HTML>\r\n\r\n")
    (t,) = r.transactions
    assert (t.method, t.target, t.status, t.response_body_bytes) == ("GET", "/", 200, end - body)


def test_early_data_decrypted_with_the_client_early_traffic_secret():
    """The resumed connection's request went as 0-RTT data (s_client: accepted; s_server: received
    as early data): qoe opens it with CLIENT_EARLY_TRAFFIC_SECRET, so the request starts with
    the ClientHello, before the ServerHello; then EndOfEarlyData and the handshake secret follow."""
    assert "Early data was accepted" in (TLS / "tls13-0rtt.client.txt").read_text()
    server = (TLS / "tls13-0rtt.server.txt").read_text()
    assert "Early data received:" in server and server.count("GET / HTTP/1.0") == 2
    first, resumed = _results("tls13-0rtt")
    assert not first.tls.early_data_offered and resumed.tls.early_data_offered and resumed.tls.resumed
    for r in (first, resumed):
        assert r.decryption.decrypted and r.decryption.client_failed_records == r.decryption.server_failed_records == 0
    (t,) = resumed.transactions
    assert (t.method, t.target) == ("GET", "/")
    assert t.request_start_ns == resumed.tls.client_hello_ns < resumed.tls.server_hello_ns
    assert (first.decryption.early_data, resumed.decryption.early_data) == (None, "accepted")


@needs_tshark
def test_rejected_early_data_is_discarded_as_the_server_discarded_it():
    """tls13-0rtt-rejected.pcap: the ticket from a server since stopped; the next one cannot
    resume and rejects the early data (s_client: "Early data was rejected"); the client sends
    its request again after the handshake and gets s_server's status page. The key log opens the
    early record (tshark shows its GET: two requests, frames of the early data and of the
    resent request) but the server read only the second: qoe reads the early record as
    rejected, and the one request is the resent one, answered 200 (the early GET taken as the
    request, the answer would pair with it; and the client's handshake records, under the
    handshake secret after the rejected early ones, were counted as failed)."""
    client = (TLS / "tls13-0rtt-rejected.client.txt").read_text()
    assert "Early data was rejected" in client and "HTTP/1.0 200 ok" in client
    rows = _tshark("tls13-0rtt-rejected", "-Y", "http.request", "-T", "fields", "-e", "frame.time_epoch")
    assert len(rows) == 2  # the early request and the resent one
    (r,) = _results("tls13-0rtt-rejected")
    assert r.tls.early_data_offered and r.decryption.early_data == "rejected"
    assert r.decryption.client_failed_records == r.decryption.server_failed_records == 0
    assert "early data rejected" in r.decryption.note and "1 record(s)" in r.decryption.note
    (t,) = r.transactions
    assert (t.method, t.target, t.status, t.complete) == ("GET", "/", 200, True)
    assert t.request_start_ns == _ns(rows[1][0]) > r.tls.server_hello_ns


def test_early_data_needs_its_secret(tmp_path):
    """Without the CLIENT_EARLY_TRAFFIC_SECRET line the early record cannot be opened: counted as
    failed, the request not seen (the label is what decrypts 0-RTT)."""
    log = tmp_path / "no-early.keylog"
    log.write_text("".join(x for x in (TLS / "tls13-0rtt.keylog").read_text().splitlines(keepends=True)
                           if not x.startswith("CLIENT_EARLY_TRAFFIC_SECRET")))
    _, resumed = _results("tls13-0rtt", log)
    assert resumed.decryption.client_failed_records >= 1
    assert not any(t.method == "GET" for t in resumed.transactions)


@needs_tshark
def test_request_times_equal_tshark():
    rows = _tshark("tls13-0rtt", "-Y", "http.request", "-T", "fields", "-e", "frame.time_epoch", "-e", "tcp.stream")
    got = [r.transactions[0].request_start_ns for r in _results("tls13-0rtt")]
    assert got == [_ns(t) for t, _ in rows]


# -- QUIC 0-RTT ----------------------------------------------------------------------------------
# data/web/tls/quic-0rtt.pcapng (make_quic_0rtt.sh, quic_0rtt.py): aioquic's client fetches /first,
# keeps the session ticket, resumes and sends GET /early in a 0-RTT packet; its log
# quic-0rtt.client.tsv says what it got and whether the server accepted the early data.


def _quic(keylog: Path | None = TLS / "quic-0rtt.keylog"):
    from qoe.web.quic import quic_connections

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return quic_connections(TLS / "quic-0rtt.pcapng", keylog=None if keylog is None else str(keylog))


def _client_log() -> list[list[str]]:
    return [x.split("\t") for x in (TLS / "quic-0rtt.client.tsv").read_text().splitlines()]


@needs_tshark
def test_quic_0rtt_packet_is_in_the_capture():
    """tshark: the resumed connection's first datagram holds an Initial and a 0-RTT packet (long
    header type 1) with a STREAM frame (0x0b)."""
    rows = [r for r in _tshark("quic-0rtt", "-Y", "quic.long.packet_type==1", "-T", "fields", "-e", "frame.time_epoch",
                               "-e", "quic.long.packet_type", "-e", "quic.frame_type", "-E", "occurrence=a")]
    assert len(rows) == 1 and rows[0][1] == "0,1" and "11" in rows[0][2].split(",")
    first, resumed = _quic()
    assert resumed.client_initial_ns == _ns(rows[0][0])


def test_quic_0rtt_request_decrypted_with_the_early_secret():
    """The request sent in 0-RTT is a transaction equal to the client's log, starting with the
    client's first Initial (before the server's): opened with CLIENT_EARLY_TRAFFIC_SECRET."""
    log = _client_log()
    assert [x[3] for x in log] == ["early=False", "early=True"]
    first, resumed = _quic()
    assert (first.zero_rtt_packets, first.early_data_accepted) == (0, False)
    assert (resumed.zero_rtt_packets, resumed.zero_rtt_decrypted, resumed.early_data_accepted) == (1, 1, True)
    assert resumed.client_failed_packets == resumed.server_failed_packets == 0
    for c, (path, status, size, _) in zip((first, resumed), log):
        (t,) = c.transactions
        assert (t.target, t.status, t.response_body_bytes) == (path, int(status), int(size)) and t.complete
    (t,) = resumed.transactions
    assert t.request_start_ns == resumed.client_initial_ns < resumed.server_initial_ns


@needs_tshark
def test_quic_0rtt_rejected_is_discarded_and_the_request_is_the_one_sent_again():
    """quic-0rtt-rejected.pcapng (make_quic_0rtt.sh ... rejected): the server finds no ticket, so
    it rejects the 0-RTT data; aioquic's client logs early=False and sends GET /early again in a
    1-RTT packet (RFC 9001 §4.6.2). The key log opens the 0-RTT packet, but the server read the
    request from the 1-RTT one: the transaction starts there (tshark: the client's first
    short-header packet holding a STREAM frame), the 0-RTT packet counted as rejected, not read."""
    from qoe.web.quic import quic_connections

    log = [x.split("\t") for x in (TLS / "quic-0rtt-rejected.client.tsv").read_text().splitlines()]
    assert [x[3] for x in log] == ["early=False", "early=False"]
    name = TLS / "quic-0rtt-rejected"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first, resumed = quic_connections(name.with_suffix(".pcapng"), keylog=str(name.with_suffix(".keylog")))
    rows = _tshark("quic-0rtt-rejected", "-Y", f"quic && udp.srcport == {resumed.client[1]}", "-T", "fields",
                   "-e", "frame.time_epoch", "-e", "quic.long.packet_type", "-e", "quic.frame_type",
                   "-E", "occurrence=a")
    assert any("1" in r[1].split(",") and "11" in r[2].split(",") for r in rows)  # the request in 0-RTT
    resent = next(r for r in rows if r[1] == "" and any(f in r[2].split(",") for f in ("8", "9", "10", "11")))
    assert (resumed.zero_rtt_packets, resumed.zero_rtt_decrypted, resumed.early_data_accepted) == (1, 0, False)
    assert "0-RTT rejected by the server" in resumed.note and "1 0-RTT packet(s)" in resumed.note
    for c, (path, status, size, _) in zip((first, resumed), log):
        (t,) = c.transactions
        assert (t.target, t.status, t.response_body_bytes) == (path, int(status), int(size)) and t.complete
    assert resumed.transactions[0].request_start_ns == _ns(resent[0]) > resumed.server_initial_ns


def test_quic_0rtt_needs_its_secret(tmp_path):
    log = tmp_path / "no-early.keylog"
    log.write_text("".join(x for x in (TLS / "quic-0rtt.keylog").read_text().splitlines(keepends=True)
                           if not x.startswith("CLIENT_EARLY_TRAFFIC_SECRET")))
    _, resumed = _quic(log)
    assert resumed.zero_rtt_packets == 1 and resumed.zero_rtt_decrypted == 0
    assert "CLIENT_EARLY_TRAFFIC_SECRET" in resumed.note
    assert all(t.target != "/early" or not t.complete for t in resumed.transactions)


# -- Chromium -----------------------------------------------------------------------------------
# data/web/resume/ (make_resume.sh): Debian's Chromium loads a page twice, 3 s apart, in one
# browser; the second load resumes the first one's session. Truth: the servers' access logs
# (aioquic: resumed and early data accepted per request; nginx: $ssl_curve, $ssl_session_reused,
# $ssl_early_data), Chromium's Navigation Timing, and tshark.

RESUME = TLS.parent / "resume"


def _access(name: str) -> list[dict]:
    import json

    return [json.loads(x) for x in (RESUME / f"{name}.server-access.jsonl").read_text().splitlines() if x.strip()]


def _resume_tshark(name: str, *args: str) -> list[list[str]]:
    cmd = [TSHARK, "-n", "-r", str(RESUME / f"{name}.pcap"), *args]
    return [x.split("\t") for x in subprocess.run(cmd, capture_output=True, text=True, check=True,
                                                  timeout=60).stdout.splitlines() if x]


def _chromium_quic(keylog: Path | None = RESUME / "h3-0rtt.keylog"):
    from qoe.web.quic import quic_connections

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return quic_connections(RESUME / "h3-0rtt.pcap", keylog=None if keylog is None else str(keylog))


def test_chromium_quic_0rtt_on_the_second_load():
    """The second connection resumed with early data (aioquic's log); Chromium's 0-RTT packet
    (its HTTP/3 control stream) opens with CLIENT_EARLY_TRAFFIC_SECRET; every request of both
    loads is a transaction equal to the server's log."""
    log = _access("h3-0rtt")
    first, second = _chromium_quic()
    assert {(x["resumed"], x["early_data_accepted"]) for x in log if x["path"].endswith("load=2")} == {(True, True)}
    assert (first.zero_rtt_packets, first.early_data_accepted) == (0, False)
    assert second.zero_rtt_packets == second.zero_rtt_decrypted >= 1 and second.early_data_accepted
    for c in (first, second):
        assert c.client_failed_packets == c.server_failed_packets == 0 and c.note is None
    got = [(t.target, t.status, t.response_body_bytes) for c in (first, second) for t in c.transactions]
    assert got == [(x["path"], x["status"], x["body_bytes"]) for x in log]


@needs_tshark
def test_chromium_quic_0rtt_packets_equal_tshark():
    rows = _resume_tshark("h3-0rtt", "-Y", "quic.long.packet_type==1", "-T", "fields", "-e", "frame.time_epoch")
    first, second = _chromium_quic()
    assert len(rows) == second.zero_rtt_packets and second.first_ns <= _ns(rows[0][0]) <= second.handshake_end_ns


def test_chromium_quic_0rtt_needs_its_secret(tmp_path):
    log = tmp_path / "no-early.keylog"
    log.write_text("".join(x for x in (RESUME / "h3-0rtt.keylog").read_text().splitlines(keepends=True)
                           if not x.startswith("CLIENT_EARLY_TRAFFIC_SECRET")))
    _, second = _chromium_quic(log)
    assert second.zero_rtt_decrypted == 0 and "CLIENT_EARLY_TRAFFIC_SECRET" in second.note


def test_chromium_hello_retry_request_and_resumption():
    """nginx accepts only secp384r1 (its log: $ssl_curve); Chromium key-shares other groups, so
    every connection has a HelloRetryRequest; qoe opens every record and finds nginx's requests;
    the second load's connection is resumed (nginx: $ssl_session_reused "r"), no early data over
    TCP (nginx: $ssl_early_data "-": Chromium does not send TLS early data over TCP)."""
    log = _access("h2-hrr")
    assert {x["curve"] for x in log} == {"secp384r1"} and {x["early_data"] for x in log} == {"-"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = connection_results(RESUME / "h2-hrr.pcap", keylog=str(RESUME / "h2-hrr.keylog"))
    assert results and all(r.tls.hello_retry for r in results)
    for r in results:
        assert r.decryption.decrypted and r.decryption.client_failed_records == r.decryption.server_failed_records == 0
        assert not r.tls.early_data_offered
    used = [r for r in results if r.transactions]
    got = [(f"{t.method} {t.target}", t.status, r.tls.resumed) for r in used for t in r.transactions]
    assert got == [(x["request"].rsplit(" ", 1)[0], x["status"], x["reused"] == "r") for x in log]


@needs_tshark
def test_chromium_hello_retry_request_equals_tshark():
    rows = _resume_tshark("h2-hrr", "-Y", "tls.handshake.type==2", "-T", "fields", "-e", "tcp.stream",
                          "-e", "tls.handshake.random")
    hrr = {s for s, r in rows if r == HRR_RANDOM}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = connection_results(RESUME / "h2-hrr.pcap", keylog=str(RESUME / "h2-hrr.keylog"))
    assert len(hrr) == len(results) == 3 and sum(r.tls.hello_retry for r in results) == 3
