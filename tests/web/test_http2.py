"""HTTP/2 inside TLS (with the key log) and in clear, checked against tshark's decrypted view.

Captures: data/web/tls/ (make_tls.sh: curl 7.88 against nginx 1.22, key logs beside them). The
reference, run live (tshark 4.0 with out-of-order reassembly on, DESIGN.md's trap):

* ``tshark -o tcp.reassemble_out_of_order:TRUE -o tls.keylog_file:K -r F -d tcp.port==80,http2
  -Y http2.type==1 -T json -e tcp.stream -e frame.time_epoch -e http2.headers.method
  -e http2.headers.path -e http2.headers.status`` (HEADERS frames: requests and responses,
  the time of the packet that completed the TLS record carrying them)
* ``... -Y http2.type==7 -T fields -e tcp.stream -e http2.goaway.last_stream_id -e http2.goaway.error``

Skipped when tshark is absent.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from qoe.web import WebOptions, page_loads
from qoe.web.http import connection_results
from qoe.web.quic import quic_connections

TLS = Path(__file__).resolve().parents[2] / "data" / "web" / "tls"
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
H2 = ["tls12-h2-chacha", "tls13-h2-aes128", "tls13-h2-chacha", "tls13-h2-goaway", "h2c-prior", "tls12-h2-cbc384"]


def keylog(name: str) -> Path | None:
    path = TLS / f"{name}.keylog"
    return path if path.exists() and path.stat().st_size else None


def tshark(name: str, *args: str) -> str:
    cmd = [TSHARK, "-n", "-r", str(TLS / f"{name}.pcapng"), "-o", "tcp.reassemble_out_of_order:TRUE",
           "-d", "tcp.port==80,http2"]
    if keylog(name) is not None:
        cmd += ["-o", f"tls.keylog_file:{keylog(name)}"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, check=True, timeout=120).stdout


def ns(text: str) -> int:
    sec, _, frac = text.partition(".")
    return int(sec) * 10**9 + int((frac + "000000000")[:9])


def reference(name: str) -> tuple[list[tuple[int, int, str, str]], list[tuple[int, int, int]]]:
    """(tcp stream, time, method, path) of every request and (tcp stream, time, status) of every
    response HEADERS frame, in capture order."""
    requests, responses = [], []
    out = tshark(name, "-Y", "http2.type==1", "-T", "json", "-e", "tcp.stream", "-e", "frame.time_epoch",
                 "-e", "http2.headers.method", "-e", "http2.headers.path", "-e", "http2.headers.status")
    for pkt in json.loads(out or "[]"):
        layer = pkt["_source"]["layers"]
        stream, t = int(layer["tcp.stream"][0]), ns(layer["frame.time_epoch"][0])
        for m, p in zip(layer.get("http2.headers.method", []), layer.get("http2.headers.path", [])):
            requests.append((stream, t, m, p))
        for s in layer.get("http2.headers.status", []):
            responses.append((stream, t, int(s)))
    return requests, responses


@needs_tshark
@pytest.mark.parametrize("name", H2)
def test_streams_requests_statuses_and_times_equal_tshark(name):
    results = connection_results(TLS / f"{name}.pcapng", keylog=keylog(name))
    requests, responses = reference(name)
    ours_req, ours_resp = [], []
    for stream, r in enumerate(results):
        assert r.http2 is not None and r.http2.error is None
        for t in r.transactions:
            assert t.protocol == "h2" and t.stream_id % 2 == 1 and t.request_version == "2"
            ours_req.append((stream, t.request_start_ns, t.method, t.target))
            if t.status is not None:
                ours_resp.append((stream, t.response_start_ns, t.status))
    assert sorted(ours_req) == sorted(requests)
    assert sorted(ours_resp) == sorted(responses)
    for r in results:  # a stream without a response was refused by a GOAWAY (tls13-h2-goaway), nothing else
        for t in r.transactions:
            assert t.complete == (t.status is not None)
            if t.status is None:
                last = max(g[1] for g in r.http2.goaways)
                assert t.stream_id > last and t.reset == "GOAWAY NO_ERROR" and "GOAWAY" in t.partial


@needs_tshark
def test_goaway_is_reported_per_connection():
    rows = [line.split("\t") for line in tshark("tls13-h2-goaway", "-Y", "http2.type==7", "-T", "fields",
                                               "-e", "tcp.stream", "-e", "http2.goaway.last_stream_id",
                                               "-e", "http2.goaway.error").splitlines()]
    results = connection_results(TLS / "tls13-h2-goaway.pcapng", keylog=keylog("tls13-h2-goaway"))
    ours = [(k, g[1], g[2]) for k, r in enumerate(results) for g in r.http2.goaways]
    assert ours == [(int(s), int(last), "NO_ERROR") for s, last, err in rows if int(err) == 0]
    assert ours  # nginx keepalive_requests 2: the server ends a connection after 2 requests
    for k, last, _ in ours:
        served = [t for t in results[k].transactions if t.stream_id <= last]
        refused = [t for t in results[k].transactions if t.stream_id > last]
        assert len(served) == 2 and all(t.complete and t.reset is None for t in served)
        assert all(t.reset == "GOAWAY NO_ERROR" and not t.complete for t in refused)
    # curl asked the refused ones again on new connections: every object was fetched once in the end
    done = sorted(t.target for r in results for t in r.transactions if t.complete)
    assert done == sorted(["/index.html", "/style.css", "/img1.jpg", "/img2.jpg", "/missing.png"])


def test_clear_text_preface_is_recognised():
    (r,) = connection_results(TLS / "h2c-prior.pcapng")
    assert r.protocol == "h2" and r.tls is None
    (t,) = r.transactions
    assert (t.url, t.status, t.response_body_bytes, t.protocol) == ("http://www.example.com/index.html", 200, 15000, "h2")


def test_without_the_key_log_tls_is_timing_only():
    results = connection_results(TLS / "tls13-h2-aes128.pcapng")
    assert [r.transactions for r in results] == [()]
    (r,) = results
    assert r.tls.handshake_ns > 0
    d = r.decryption  # without keys: the encrypted bursts, and why nothing more
    assert not d.keys_found and not d.decrypted and "no key log" in d.note and "not visible" in d.note
    assert d.bursts and sum(b.bytes for b in d.bursts) == r.tls.client_records.application_data_bytes + \
        r.tls.server_records.application_data_bytes


@needs_tshark
def test_pages_with_the_key_log_hold_every_object():
    name = "tls13-h2-aes128"
    _, responses = reference(name)
    (page,) = page_loads(TLS / f"{name}.pcapng", options=WebOptions(keylog=str(keylog(name))))
    assert page.objects == 5 and sorted(page.statuses) == sorted(s for _, _, s in responses)
    assert page.url == "https://www.example.com/index.html" and page.complete
    assert {row["protocol"] for row in page.tables()["objects"]} == {"h2"}
    (hidden,) = page_loads(TLS / f"{name}.pcapng")  # the same capture without keys: one TLS item
    assert hidden.objects == 1 and hidden.statuses == ()
    assert any("not visible" in n for n in hidden.notes)
    assert hidden.plt_s == pytest.approx(page.plt_s, abs=0.005)  # both: SYN to the last server byte


def test_the_capture_own_secrets_block_is_used():
    (page,) = page_loads(TLS / "tls13-h2-dsb.pcapng")  # editcap --inject-secrets: no --keylog needed
    assert page.objects == 5 and {t.protocol for t in page.transactions} == {"h2"}


def test_quic_pages_with_and_without_keys():
    cap = TLS / "quic-h3.pcapng"
    (hidden,) = page_loads(cap)
    (shown,) = page_loads(cap, options=WebOptions(keylog=str(TLS / "quic-h3.keylog")))
    assert hidden.objects == 1 and any("not visible" in n for n in hidden.notes)
    assert any("QUIC" in n for n in hidden.notes)
    assert shown.objects == 6 and shown.start_event == "quic-initial"
    assert {t.protocol for t in shown.transactions} == {"h3"}
    # both "fully loaded" readings end at the last server packet and start at the first Initial
    assert shown.start_ns == hidden.start_ns and shown.plt_s == pytest.approx(hidden.plt_s, abs=1e-3)


def test_a_decrypted_quic_connection_without_a_request_was_opened_ahead():
    """quic-h3-unused (make_quic.sh: aioquic's client shakes hands and closes without a request,
    and 50 ms later another fetches two objects, as a browser's connection opened ahead and the
    one it uses): with the key log, both decrypted, HTTP/3 on both; tshark's decrypted view
    (quic-h3-unused.tshark-http3.tsv) has HEADERS frames (type 1) on four streams of the second
    connection only: two requests, two responses. The page holds the two transactions and says
    the first connection was opened and never used, not that its objects are hidden (as it said
    before: "encrypted without keys" with the key log given); without keys, both hidden."""
    cap, keys = TLS / "quic-h3-unused.pcapng", TLS / "quic-h3-unused.keylog"
    rows = [line.split("\t") for line in (TLS / "quic-h3-unused.tshark-http3.tsv").read_text().splitlines()]
    headers = sum(types.split(",").count("1") for _, _, types in rows)
    conns = quic_connections(cap, keylog=keys)
    assert [(c.decrypted, c.alpn, len(c.transactions)) for c in conns] == [(True, "h3", 0), (True, "h3", headers // 2)]
    (shown,) = page_loads(cap, options=WebOptions(keylog=str(keys)))
    assert [t.target for t in shown.transactions] == ["/index.html", "/style.css"]
    assert "1 TLS connection(s) opened and never used (decrypted: no request inside)" in shown.notes
    assert not any("without keys" in n for n in shown.notes)
    (hidden,) = page_loads(cap)
    assert any(n.startswith("encrypted without keys: 2 connection(s)") for n in hidden.notes)


def test_the_cli_table_of_pages_says_what_qoe_could_not_see():
    """qoe web pages printed a QUIC page without keys as one row and nothing more: the notes
    (objects not visible, no key log) were in JSON and CSV only. The table is followed by
    them, as qoe score's is; with the key log, no such note."""
    from click.testing import CliRunner

    from qoe_cli.main import cli

    cap = str(TLS / "quic-h3.pcapng")
    (page,) = page_loads(cap)
    res = CliRunner().invoke(cli, ["web", "pages", cap], catch_exceptions=False)
    notes = [ln for ln in res.output.splitlines() if ln.startswith("note: ")]
    assert notes == [f"note: [{page.label}] {n}" for n in page.notes] and len(notes) >= 2
    assert any("not visible" in n for n in notes)
    res = CliRunner().invoke(cli, ["web", "pages", cap, "--keylog", str(TLS / "quic-h3.keylog")],
                             catch_exceptions=False)
    assert not any("not visible" in ln for ln in res.output.splitlines())


def test_cli_pages_har_and_score_take_the_key_log(tmp_path):
    from click.testing import CliRunner

    from qoe_cli.main import cli

    cap, kl = str(TLS / "tls12-h2-chacha.pcapng"), str(TLS / "tls12-h2-chacha.keylog")
    run = CliRunner()
    res = run.invoke(cli, ["web", "pages", cap, "--keylog", kl, "--objects", "--format", "json"],
                     catch_exceptions=False)
    assert res.exit_code == 0
    (page,) = json.loads(res.output)
    assert page["objects"] == 5 and {t["protocol"] for t in page["transactions"]} == {"h2"}
    har = tmp_path / "page.har"
    res = run.invoke(cli, ["web", "har", cap, "--keylog", kl, "-o", str(har)], catch_exceptions=False)
    assert res.exit_code == 0 and "5 entries" in res.output
    entries = json.loads(har.read_text())["log"]["entries"]
    assert [e["response"]["status"] for e in entries] == [200, 200, 200, 200, 404]
    res = run.invoke(cli, ["score", cap, "--kind", "web", "--keylog", kl, "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0
    report = json.loads(res.output)
    assert report["inputs"]["keylog"] == [kl] and report["results"][0]["objects"] == 5
    res = run.invoke(cli, ["web", "pages", cap, "--keylog", str(TLS / "make_tls.sh")])
    assert res.exit_code == 2 and "not an NSS key log" in res.output


def test_push_priority_reset_and_goaway_frames():
    """Frames none of the captures carry (curl refuses pushes; Chromium no longer asks for them),
    written with hyperframe and hpack's encoder (the other side of the libraries qoe decodes
    with): RFC 9113 §6.3/RFC 7540 §5.3 priority (weight = field + 1), §6.6 PUSH_PROMISE, §6.4
    RST_STREAM (CANCEL = 0x8, §7), §6.8 GOAWAY."""
    from hpack import Encoder
    from hyperframe.frame import (DataFrame, GoAwayFrame, HeadersFrame, PushPromiseFrame, RstStreamFrame,
                                  SettingsFrame)

    from qoe.web.http import parse
    from qoe.web.tcp import CLIENT, SERVER, ConnectionId

    ce, se = Encoder(), Encoder()

    def headers(sid, enc, fields, end=False, **prio):
        f = HeadersFrame(sid)
        f.data = enc.encode(fields)
        f.flags.add("END_HEADERS")
        if end:
            f.flags.add("END_STREAM")
        if prio:
            f.flags.add("PRIORITY")
            f.depends_on, f.stream_weight, f.exclusive = prio["depends_on"], prio["weight"] - 1, prio["exclusive"]
        return f.serialize()

    def data(sid, body):
        f = DataFrame(sid)
        f.data = body
        f.flags.add("END_STREAM")
        return f.serialize()

    req = [(":method", "GET"), (":scheme", "https"), (":authority", "example.org"), (":path", "/")]
    client = (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + SettingsFrame(0).serialize()
              + headers(1, ce, req, end=True, depends_on=0, weight=256, exclusive=True)
              + headers(3, ce, [*req[:3], (":path", "/slow"), ("priority", "u=5")], end=True))
    push = PushPromiseFrame(1)
    push.promised_stream_id = 2
    push.data = se.encode([*req[:3], (":path", "/pushed.css")])
    push.flags.add("END_HEADERS")
    rst = RstStreamFrame(3)
    rst.error_code = 0x8
    goaway = GoAwayFrame(0)
    goaway.last_stream_id = 3
    server = (SettingsFrame(0).serialize() + push.serialize()
              + headers(1, se, [(":status", "200"), ("content-type", "text/html")]) + data(1, b"<html>")
              + headers(2, se, [(":status", "200")]) + data(2, b"css") + rst.serialize() + goaway.serialize())
    conn = ConnectionId(("192.0.2.1", 50000), ("198.51.100.2", 80), 0, 0, True)
    res = parse(conn, [("data", CLIENT, 1_000, 0, client), ("data", SERVER, 2_000, 0, server),
                       ("close", CLIENT, 3_000, 0, "fin"), ("close", SERVER, 3_000, 0, "fin")])
    assert res.protocol == "h2" and res.http2.pushes == 1 and res.http2.resets == 1
    assert res.http2.goaways == (("server", 3, "NO_ERROR", 2_000),)
    by_stream = {t.stream_id: t for t in res.transactions}
    main, slow, pushed = by_stream[1], by_stream[3], by_stream[2]
    assert (main.status, main.response_body_bytes, main.complete) == (200, 6, True)
    assert main.priority == "weight=256 depends_on=0 exclusive=True"
    assert slow.priority == "u=5" and slow.reset == "RST_STREAM CANCEL" and not slow.complete
    assert pushed.pushed and pushed.target == "/pushed.css" and pushed.status == 200 and pushed.complete


def _cut(packets, sizes=(1, 4, 5, 9, 13, 300)):
    """Each TCP segment's payload cut into pieces of the sizes in turn (same time, sequence
    numbers moved on, FIN on the last piece): the bytes each way are the same."""
    import dataclasses

    from qoe.capture import TCP_FIN

    k = 0
    for p in packets:
        if p.tcp is None or len(p.payload) <= 1:
            yield p
            continue
        data, off = p.payload, 0
        while off < len(data):
            n = sizes[k % len(sizes)]
            k += 1
            piece = data[off:off + n]
            last = off + n >= len(data)
            flags = p.tcp.flags if last else p.tcp.flags & ~TCP_FIN
            tcp = dataclasses.replace(p.tcp, seq=(p.tcp.seq + off) % 2**32, flags=flags, data_len=len(piece))
            yield dataclasses.replace(p, payload=piece, tcp=tcp)
            off += n


@pytest.mark.parametrize("name", ["tls13-h2-aes128", "tls12-h2-chacha", "h2c-prior"])
def test_records_and_frames_cut_anywhere_give_the_same_transactions(name):
    """TLS record headers and bodies (and, in clear, HTTP/2 frames) cut at every kind of place
    (segments of 1 to 300 bytes instead of the captured ones): the same transactions, times
    and sizes, and every record still opens (the captured segmentation's values are tshark's,
    test_streams_requests_statuses_and_times_equal_tshark)."""
    from qoe.capture import read_packets

    path = TLS / f"{name}.pcapng"
    whole = connection_results(path, keylog=keylog(name))
    cut = connection_results(_cut(read_packets(path, protocols=("tcp",))), keylog=keylog(name))
    assert sum(len(r.transactions) for r in whole) > 0
    assert [[t.to_dict() for t in r.transactions] for r in cut] == [[t.to_dict() for t in r.transactions]
                                                                    for r in whole]
    assert [r.http2.to_dict() for r in cut] == [r.http2.to_dict() for r in whole]
    assert [r.decryption and (r.decryption.client_records, r.decryption.server_records,
                              r.decryption.failed_records) for r in cut] == \
        [r.decryption and (r.decryption.client_records, r.decryption.server_records, r.decryption.failed_records)
         for r in whole]


def test_frames_cut_at_every_byte_keep_streams_and_times():
    """An HTTP/2 connection written with hyperframe and hpack's encoder (RFC 9113 §4.1 frames,
    §6.10 a field block over HEADERS + CONTINUATION, §6.1 a padded DATA frame), each direction
    delivered in two pieces cut at every byte: the streams are what was written, and each
    time is that of the delivery holding the frame's first byte (request/response start) or
    last byte (end), as qoe.web._h2 defines them."""
    from hpack import Encoder
    from hyperframe.frame import ContinuationFrame, DataFrame, HeadersFrame, SettingsFrame, WindowUpdateFrame

    from qoe.web.http import parse
    from qoe.web.tcp import CLIENT, SERVER, ConnectionId

    ce, se = Encoder(), Encoder()
    frames: dict[int, list[tuple[str, int, bytes]]] = {CLIENT: [], SERVER: []}  # (what, stream, bytes)

    def add(direction, what, sid, frame):
        frames[direction].append((what, sid, frame.serialize()))

    def headers(direction, enc, sid, fields, end, split=False):
        block = enc.encode(fields)
        f = HeadersFrame(sid)
        f.data = block[:len(block) // 2] if split else block
        if end:
            f.flags.add("END_STREAM")
        if not split:
            f.flags.add("END_HEADERS")
        add(direction, "headers", sid, f)
        if split:
            c = ContinuationFrame(sid)
            c.data = block[len(block) // 2:]
            c.flags.add("END_HEADERS")
            add(direction, "continuation", sid, c)

    def data(direction, sid, body, end, pad=0):
        f = DataFrame(sid)
        f.data = body
        if pad:
            f.flags.add("PADDED")
            f.pad_length = pad
        if end:
            f.flags.add("END_STREAM")
        add(direction, "data", sid, f)

    req = [(":method", "GET"), (":scheme", "http"), (":authority", "example.org")]
    add(CLIENT, "settings", 0, SettingsFrame(0))
    headers(CLIENT, ce, 1, [*req, (":path", "/")], end=True)
    headers(CLIENT, ce, 3, [*req, (":path", "/big"), ("cookie", "x" * 300)], end=True, split=True)
    add(SERVER, "settings", 0, SettingsFrame(0))
    headers(SERVER, se, 1, [(":status", "200"), ("content-type", "text/html")], end=False)
    data(SERVER, 1, b"a" * 100, end=False, pad=7)
    w = WindowUpdateFrame(0)
    w.window_increment = 1000
    add(SERVER, "window", 0, w)
    headers(SERVER, se, 3, [(":status", "404")], end=False, split=True)
    data(SERVER, 1, b"b" * 50, end=True)
    data(SERVER, 3, b"gone", end=True)
    streams = {CLIENT: b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"".join(f for _, _, f in frames[CLIENT]),
               SERVER: b"".join(f for _, _, f in frames[SERVER])}

    def spans(direction):
        """(what, stream, first byte, end) of each frame of a direction."""
        out, at = [], 24 if direction == CLIENT else 0
        for what, sid, f in frames[direction]:
            out.append((what, sid, at, at + len(f)))
            at += len(f)
        return out

    def expected(direction, k):
        """Start and end times per stream of a direction cut at k (bytes before k at 1_000 ns,
        the rest at 2_000 ns)."""
        first = {}
        last = {}
        for what, sid, a, b in spans(direction):
            if what in ("headers", "continuation", "data") and sid:
                first.setdefault(sid, 1_000 if a < k else 2_000)
                last[sid] = 1_000 if b <= k else 2_000
        return first, last

    conn = ConnectionId(("192.0.2.1", 50000), ("198.51.100.2", 80), 0, 0, True)
    for cut_dir in (CLIENT, SERVER):
        other = SERVER if cut_dir == CLIENT else CLIENT
        whole = streams[cut_dir]
        for k in range(1, len(whole)):
            events = [("data", cut_dir, 1_000, 0, whole[:k]), ("data", cut_dir, 2_000, k, whole[k:]),
                      ("data", other, 3_000, 0, streams[other]),
                      ("close", CLIENT, 4_000, 0, "fin"), ("close", SERVER, 4_000, 0, "fin")]
            res = parse(conn, events, protocol="h2")
            assert res.http2.error is None, (cut_dir, k)
            by = {t.stream_id: t for t in res.transactions}
            assert sorted(by) == [1, 3]
            one, three = by[1], by[3]
            assert (one.target, one.status, one.response_body_bytes) == ("/", 200, 150)
            assert one.response_body_wire_bytes == 150 + 1 + 7  # RFC 9113 §6.1: Pad Length field and padding
            assert (three.target, three.status, three.response_body_bytes) == ("/big", 404, 4)
            assert dict(three.request_headers)["cookie"] == "x" * 300 and one.complete and three.complete
            first, last = expected(cut_dir, k)
            for sid, t in by.items():
                if cut_dir == CLIENT:
                    assert (t.request_start_ns, t.request_end_ns) == (first[sid], last[sid]), (k, sid)
                    assert (t.response_start_ns, t.response_end_ns) == (3_000, 3_000)
                else:
                    assert (t.response_start_ns, t.response_end_ns) == (first[sid], last[sid]), (k, sid)
                    assert (t.request_start_ns, t.request_end_ns) == (3_000, 3_000)


def test_huffman_strings_decode_alike_on_every_connection_and_a_bad_one_fails_each_time():
    """qoe memoizes hpack's Huffman decoder (strings recur over a browser's connections): a
    string met again decodes to what the encoder was given, and a string holding the EOS
    code (RFC 7541 §5.2: a decoding error) fails on every connection that sends it, not only
    the first (errors are not remembered as values)."""
    from hpack import Encoder
    from hyperframe.frame import HeadersFrame, SettingsFrame

    from qoe.web.http import parse
    from qoe.web.tcp import CLIENT, ConnectionId

    agent = "Mozilla/5.0 (X11; Linux x86_64) qoe-test/" + "7" * 40

    def connection(port, block):
        f = HeadersFrame(1)
        f.data = block
        f.flags.add("END_HEADERS")
        f.flags.add("END_STREAM")
        client = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + SettingsFrame(0).serialize() + f.serialize()
        conn = ConnectionId(("192.0.2.1", port), ("198.51.100.2", 80), 0, 0, True)
        return parse(conn, [("data", CLIENT, 1_000, 0, client), ("close", CLIENT, 2_000, 0, "fin")])

    req = [(":method", "GET"), (":scheme", "https"), (":authority", "example.org"), (":path", "/"),
           ("user-agent", agent)]
    # literal without indexing, new name "x-bad" (not Huffman), value Huffman-coded: 4 bytes of ones
    bad = Encoder().encode(req[:4]) + b"\x00\x05x-bad\x84\xff\xff\xff\xff"
    for port in range(50000, 50004):
        good = connection(port, Encoder().encode(req))
        assert good.http2.error is None
        assert dict(good.transactions[0].request_headers)["user-agent"] == agent
        failed = connection(port + 100, bad)
        assert failed.http2.error is not None and not failed.transactions


def test_the_huffman_memo_takes_what_any_hpack_release_hands_it():
    """The memo qoe puts in front of hpack's Huffman decoder keys on bytes: an hpack release that
    hands it a memoryview slice (unhashable) gets the same answer, not a TypeError; the empty
    string stays empty. Reference: RFC 7541 Appendix C.4.1, "www.example.com" Huffman-coded as
    f1e3 c2e5 f23a 6ba0 ab90 f4ff."""
    import hpack.hpack

    from qoe.web.http import parse  # noqa: F401 - loads the HTTP/2 parser, and with it the memo

    coded = bytes.fromhex("f1e3c2e5f23a6ba0ab90f4ff")
    for form in (coded, memoryview(coded), bytearray(coded), memoryview(b"x" + coded)[1:]):
        assert hpack.hpack.decode_huffman(form) == b"www.example.com"
    assert hpack.hpack.decode_huffman(b"") == b""


def test_hpack_fields_come_out_as_hpack_decodes_them():
    """qoe lets hpack return the fields it decoded without copying each into a new tuple
    (``raw=True``): the same names and values, a never-indexed field still a
    ``NeverIndexedHeaderTuple`` (RFC 7541 §6.2.3: a proxy must keep it so), text when asked
    (``raw=False``), and a field of another bytes-like type made bytes as hpack makes it.
    Reference: RFC 7541 Appendix C.3.1, the first request without Huffman coding
    (8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d), and C.2.3 (a never-indexed literal,
    ``password: secret``: 1008 7061 7373 776f 7264 0673 6563 7265 74)."""
    import hpack.hpack
    from hpack import Decoder
    from hpack.struct import HeaderTuple, NeverIndexedHeaderTuple

    from qoe.web.http import parse  # noqa: F401 - loads the HTTP/2 parser

    c31 = bytes.fromhex("828684410f7777772e6578616d706c652e636f6d")
    c23 = bytes.fromhex("100870617373776f726406736563726574")
    fields = Decoder().decode(c31 + c23, raw=True)
    assert fields == [(b":method", b"GET"), (b":scheme", b"http"), (b":path", b"/"),
                      (b":authority", b"www.example.com"), (b"password", b"secret")]
    assert [type(f) for f in fields] == [HeaderTuple] * 4 + [NeverIndexedHeaderTuple]
    assert all(type(n) is bytes and type(v) is bytes for n, v in fields)
    text = Decoder().decode(c31 + c23)
    assert text[3] == (":authority", "www.example.com") and type(text[4]) is NeverIndexedHeaderTuple
    odd = hpack.hpack._unicode_if_needed(HeaderTuple(memoryview(b"x-a"), bytearray(b"1")), True)
    assert odd == (b"x-a", b"1") and type(odd[0]) is bytes and type(odd[1]) is bytes


def test_hpack_debug_records_reach_a_program_that_asks_for_them(caplog):
    """qoe decodes header blocks with hpack's per-field debug calls silenced while hpack's
    logger drops DEBUG records anyway (they cost 7.5 % of its time); a program that turns
    DEBUG on for hpack gets them, from the next block on, and none are made once it is off
    again; a program's own use of hpack between qoe's blocks logs as it would. Reference: hpack's own records ("Decoding ..." per block) as hpack.Decoder logs
    them when called directly."""
    import logging

    from hpack import Encoder
    from hyperframe.frame import HeadersFrame, SettingsFrame

    from qoe.web.http import parse
    from qoe.web.tcp import CLIENT, ConnectionId

    def connection(port):
        f = HeadersFrame(1)
        f.data = Encoder().encode([(":method", "GET"), (":scheme", "http"), (":authority", "example.org"),
                                   (":path", "/")])
        f.flags.add("END_HEADERS")
        f.flags.add("END_STREAM")
        client = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + SettingsFrame(0).serialize() + f.serialize()
        conn = ConnectionId(("192.0.2.1", port), ("198.51.100.2", 80), 0, 0, True)
        return parse(conn, [("data", CLIENT, 1_000, 0, client), ("close", CLIENT, 2_000, 0, "fin")])

    def hpack_records():  # (the decoder's: the test's encoder logs too)
        return [r for r in caplog.records if r.name.startswith("hpack") and r.levelno == logging.DEBUG
                and r.getMessage().startswith("Decod")]

    with caplog.at_level(logging.DEBUG, logger="hpack"):
        r = connection(50100)
    assert r.transactions[0].url == "http://example.org/"
    on = hpack_records()
    assert any(rec.getMessage().startswith("Decoding ") for rec in on) and len(on) > 5
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="hpack"):
        connection(50101)
    assert hpack_records() == []
    # a program's own hpack decoding after qoe's, with DEBUG on, logs as hpack does: qoe's quiet
    # logger is not left in hpack's module between the blocks qoe decodes
    from hpack import Decoder

    with caplog.at_level(logging.DEBUG, logger="hpack"):
        Decoder().decode(Encoder().encode([(":method", "GET"), (":path", "/")]))
    assert any(rec.getMessage().startswith("Decoding ") for rec in hpack_records())
