"""HTTP transactions and TLS hellos of the sample captures checked against tshark, run live.

References (Wireshark's own dissectors, an independent implementation; the samples use
ports 8080 and 8443, hence the ``-d`` decode-as options):

* requests: ``tshark -r F -d tcp.port==8080,http -Y http.request -T fields -e tcp.stream
  -e http.request.method -e http.request.uri -e frame.number -e tcp.segment``
* responses: ``tshark -r F -d tcp.port==8080,http -Y http.response -T fields -e tcp.stream
  -e http.response.code -e http.content_type -e frame.number -e tcp.segment``
  (1xx responses are listed like final ones)
* frame times and payload lengths: ``tshark -r F -T fields -e frame.number
  -e frame.time_epoch -e tcp.len``
* ClientHello: ``tshark -r F -d tcp.port==8443,tls -Y tls.handshake.type==1 -T fields -e
  tls.handshake.extensions_server_name -e tls.handshake.extensions_alpn_str -e
  tls.handshake.extensions.supported_version -e frame.time_epoch``
* ServerHello: ``... -Y tls.handshake.type==2 -T fields -e tls.handshake.ciphersuite -e
  tls.handshake.extensions.supported_version -e tls.handshake.version -e
  tls.handshake.extensions_alpn_str``
* records: ``... -Y tls -T fields -e tcp.srcport -e tls.record.content_type -e
  tls.record.opaque_type -e tls.record.length`` (TLS 1.3 shows encrypted records'
  type 23 as ``opaque_type``)

Skipped when tshark is absent.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter

import pytest
from web_streams import SAMPLES, results


pytestmark = pytest.mark.tshark
TSHARK = shutil.which("tshark")
HTTP_SAMPLES = ["http10", "keepalive", "framing", "continue", "pipelined"]
TLS_SAMPLES = ["tls12", "tls13"]
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")


def tshark(name: str, *args: str) -> list[list[str]]:
    cmd = [TSHARK, "-r", str(SAMPLES / f"{name}.pcap"), "-d", "tcp.port==8080,http", "-d", "tcp.port==8443,tls", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout
    return [line.split("\t") for line in out.splitlines()]


def ns(text: str) -> int:
    sec, _, frac = text.partition(".")
    return int(sec) * 10**9 + int((frac + "000000000")[:9])


def frames(name: str) -> dict[int, tuple[int, int]]:
    rows = tshark(name, "-T", "fields", "-e", "frame.number", "-e", "frame.time_epoch", "-e", "tcp.len")
    return {int(n): (ns(t), int(length or 0)) for n, t, length in rows}


def ours(name: str):
    return results(SAMPLES / f"{name}.pcap")


@needs_tshark
@pytest.mark.parametrize("name", HTTP_SAMPLES)
def test_requests_match_tshark(name):
    rows = tshark(name, "-Y", "http.request", "-T", "fields", "-e", "tcp.stream", "-e", "http.request.method",
                  "-e", "http.request.uri")
    theirs = [(int(s), m, u) for s, ms, us in rows for m, u in zip(ms.split(","), us.split(","))]
    mine = [(t.connection, t.method, t.target) for r in ours(name) for t in r.transactions]
    assert mine == theirs


@needs_tshark
@pytest.mark.parametrize("name", HTTP_SAMPLES)
def test_responses_match_tshark(name):
    rows = tshark(name, "-Y", "http.response", "-T", "fields", "-e", "tcp.stream", "-e", "http.response.code",
                  "-e", "http.content_type")
    theirs = [(int(s), int(c), ct or None) for s, c, ct in rows]
    mine = []
    for r in ours(name):
        for t in r.transactions:
            mine += [(t.connection, code, None) for code in t.interim_statuses]
            mine.append((t.connection, t.status, t.content_type))
    assert mine == theirs


@needs_tshark
@pytest.mark.parametrize("name", HTTP_SAMPLES)
def test_first_and_last_byte_times_match_tshark_frames(name):
    times = frames(name)

    def span(frame: str, segments: str) -> tuple[int, int]:
        # frames holding the message's bytes (tshark lists them when reassembled); the
        # last one *with payload* (a close-delimited body is shown at the FIN frame)
        nums = [int(x) for x in segments.split(",")] if segments else [int(frame)]
        nums = [n for n in nums if times[n][1] > 0]
        return times[nums[0]][0], times[nums[-1]][0]

    req = tshark(name, "-Y", "http.request", "-T", "fields", "-e", "frame.number", "-e", "tcp.segment",
                 "-e", "http.request.method")
    resp = tshark(name, "-Y", "http.response", "-T", "fields", "-e", "frame.number", "-e", "tcp.segment",
                  "-e", "http.response.code")
    req_starts = [span(f, s)[0] for f, s, m in req for _ in m.split(",")]
    finals = [span(f, s) for f, s, c in resp if int(c) >= 200]
    first_any = [span(f, s)[0] for f, s, c in resp]
    txs = [t for r in ours(name) for t in r.transactions]
    assert [t.request_start_ns for t in txs] == req_starts
    assert [t.response_end_ns for t in txs] == [e for _s, e in finals]
    # the first response byte: of the 1xx when there is one
    starts = []
    i = 0
    for t in txs:
        starts.append(first_any[i])
        i += 1 + len(t.interim_statuses)
    assert [t.response_start_ns for t in txs] == starts


@needs_tshark
@pytest.mark.parametrize("name", TLS_SAMPLES)
def test_client_hello_matches_tshark(name):
    (row,) = tshark(name, "-Y", "tls.handshake.type==1", "-T", "fields", "-e", "tls.handshake.extensions_server_name",
                    "-e", "tls.handshake.extensions_alpn_str", "-e", "tls.handshake.extensions.supported_version",
                    "-e", "frame.time_epoch")
    sni, alpn, versions, t = row
    (r,) = ours(name)
    s = r.tls
    assert r.protocol == "tls"
    assert s.server_name == sni == "www.example.test"
    assert s.alpn_offered == tuple(alpn.split(","))
    assert s.offered_versions == (tuple(int(v, 16) for v in versions.split(",")) if versions else (0x0303,))
    assert s.client_hello_ns == ns(t)


@needs_tshark
@pytest.mark.parametrize("name", TLS_SAMPLES)
def test_server_hello_matches_tshark(name):
    (row,) = tshark(name, "-Y", "tls.handshake.type==2", "-T", "fields", "-e", "tls.handshake.ciphersuite",
                    "-e", "tls.handshake.extensions.supported_version", "-e", "tls.handshake.version",
                    "-e", "tls.handshake.extensions_alpn_str", "-e", "frame.time_epoch")
    suite, selected, legacy, alpn, t = row
    s = ours(name)[0].tls
    assert s.cipher_suite == int(suite, 16)
    assert s.version == int(selected or legacy, 16)
    assert s.alpn == (alpn or None)  # TLS 1.3 sends it encrypted: tshark sees none either
    assert s.server_hello_ns == ns(t)


@needs_tshark
@pytest.mark.parametrize("name", TLS_SAMPLES)
def test_record_counts_match_tshark(name):
    rows = tshark(name, "-Y", "tls", "-T", "fields", "-e", "tcp.srcport", "-e", "tls.record.content_type",
                  "-e", "tls.record.opaque_type", "-e", "tls.record.length")
    s = ours(name)[0].tls
    server_port = s.server[1]
    counts = {True: Counter(), False: Counter()}
    app_bytes = {True: 0, False: 0}
    for port, ctypes, opaque, lengths in rows:
        from_server = int(port) == server_port
        # records of a frame are listed in order; TLS 1.3 opaque ones are type 23
        types = [int(x) for x in ctypes.split(",") if x] + [23 for x in opaque.split(",") if x]
        counts[from_server].update(types)
        if not opaque:  # TLS 1.2: pair types with lengths in order
            app_bytes[from_server] += sum(int(n) for ty, n in zip(types, lengths.split(",")) if ty == 23)
        else:  # TLS 1.3: the clear records (22, 20) come first in these captures
            clear = len([x for x in ctypes.split(",") if x])
            app_bytes[from_server] += sum(int(n) for n in lengths.split(",")[clear:])
    for rec, from_server in ((s.client_records, False), (s.server_records, True)):
        c = counts[from_server]
        assert (rec.handshake, rec.change_cipher_spec, rec.alert, rec.application_data) == (c[22], c[20], c[21], c[23])
        assert rec.application_data_bytes == app_bytes[from_server]
