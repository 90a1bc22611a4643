"""Page loads from real loopback captures (tests/web/http_samples, made by its make_samples.sh
with curl and Python's http.server), checked against tshark on the same files."""

from __future__ import annotations

import json
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from qoe.errors import InputError
from qoe.report import to_json
from qoe.web import WebOptions, iter_page_loads, page_loads, pages_from_har
from qoe.web.har import read_har
from qoe_cli.main import cli

SAMPLES = Path(__file__).resolve().parent / "http_samples"
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="needs tshark (make test installs it)")


def _tshark_times(pcap: Path, display_filter: str) -> list[float]:
    out = subprocess.run(["tshark", "-r", str(pcap), "-Y", display_filter, "-T", "fields", "-e", "frame.time_epoch"],
                         capture_output=True, text=True, check=True).stdout.split()
    return [float(x) for x in out]


@needs_tshark
def test_plt_runs_from_the_first_syn_to_the_last_byte():
    """http10.pcap: curl fetches 4 objects from http.server, a connection each (HTTP/1.0)."""
    cap = SAMPLES / "http10.pcap"
    (page,) = page_loads(cap)
    # tshark -Y "tcp.flags.syn==1 && tcp.flags.ack==0": the first SYN; -Y "tcp.srcport==8080 && tcp.len>0": the last data
    syn = _tshark_times(cap, "tcp.flags.syn==1 && tcp.flags.ack==0")[0]
    last = _tshark_times(cap, "tcp.srcport==8080 && tcp.len>0")[-1]
    assert page.start_event == "syn" and page.plt_s == pytest.approx(last - syn, abs=2e-6)
    statuses = [int(x) for x in subprocess.run(
        ["tshark", "-r", str(cap), "-Y", "http.response", "-T", "fields", "-e", "http.response.code"],
        capture_output=True, text=True, check=True).stdout.split()]
    assert list(page.statuses) == statuses
    assert (page.objects, page.connections, page.new_connections) == (4, 4, 4)
    assert page.mos == 5.0 and page.complete and page.scheme == "http"
    doc = json.loads(to_json(page.to_dict()))
    assert doc["plt_s"] == page.plt_s and len(doc["transactions"]) == 4


def test_an_idle_gap_splits_pages():
    cap = SAMPLES / "keepalive.pcap"
    (one,) = page_loads(cap)
    many = page_loads(cap, options=WebOptions(idle_gap_s=1e-4))
    assert len(many) > 1 and sum(p.objects for p in many) == one.objects
    assert [p.index for p in many] == list(range(len(many)))
    with pytest.raises(InputError, match="idle_gap_s must be a positive"):
        WebOptions(idle_gap_s=0)


def test_options_convention_old_keywords_warn_and_both_is_ambiguous():
    """Issue 21's convention: options=WebOptions(...); the old keywords keep working one release
    with a DeprecationWarning naming the new spelling; both at once is an InputError."""
    cap = SAMPLES / "keepalive.pcap"
    new = page_loads(cap, options=WebOptions(idle_gap_s=1e-4, t_min=1.0, t_max=4.0))
    with pytest.warns(DeprecationWarning, match=r"WebOptions\(idle_gap_s=, t_min=, t_max="):
        old = page_loads(cap, idle_gap_s=1e-4, bounds=(1.0, 4.0))
    assert old == new and len(new) > 1 and {p.preset for p in new} == {"custom"}
    with pytest.warns(DeprecationWarning, match="iter_page_loads"):
        assert list(iter_page_loads(cap, idle_gap_s=1e-4, bounds=(1.0, 4.0))) == new
    with pytest.raises(InputError, match="ambiguous"):
        page_loads(cap, options=WebOptions(), share=0.4)
    with pytest.raises(InputError, match="ambiguous"):
        pages_from_har(read_har(SAMPLES / "mitmproxy.har"), options=WebOptions(), preset="backbone")
    with pytest.raises(TypeError, match="unexpected keyword"):
        page_loads(cap, idle_gap=1.0)
    with pytest.warns(DeprecationWarning, match="t_min"):
        assert WebOptions(t_min=1.0, t_max=4.0).bounds == (1.0, 4.0)


@needs_tshark
def test_an_https_page_is_its_server_name():
    cap = SAMPLES / "tls13.pcap"
    sni = subprocess.run(["tshark", "-r", str(cap), "-Y", "tls.handshake.type==1", "-T", "fields", "-e",
                          "tls.handshake.extensions_server_name"], capture_output=True, text=True, check=True).stdout.split()
    (page,) = page_loads(cap)
    assert page.scheme == "https" and page.url == f"https://{sni[0]}/" and page.objects == 1 and page.bytes > 0


def test_har_export_and_import_give_the_same_plt(tmp_path):
    """qoe web har writes HAR 1.2 (validated against the schema written from the spec); read back,
    each page's PLT is its fully-loaded time (onLoad is -1: a capture cannot see it)."""
    jsonschema = pytest.importorskip("jsonschema")
    cap = SAMPLES / "http10.pcap"
    out = tmp_path / "p.har"
    res = CliRunner().invoke(cli, ["web", "har", str(cap), "-o", str(out)])
    assert res.exit_code == 0, res.output
    har = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(har, json.loads((Path(__file__).parent / "har12.schema.json").read_text()))
    assert har["log"]["pages"][0]["pageTimings"]["onLoad"] == -1
    (page,) = page_loads(cap)
    (again,) = pages_from_har(read_har(out))
    assert again.plt_s == pytest.approx(page.plt_s, abs=1e-6) and again.objects == page.objects
    assert any("fully loaded" in n for n in again.notes)


def test_cli_pages_table_json_and_objects():
    cap = SAMPLES / "http10.pcap"
    run = CliRunner().invoke
    res = run(cli, ["web", "pages", str(cap)])
    assert res.exit_code == 0 and "diagnosis" in res.output and "index.html" in res.output
    res = run(cli, ["web", "pages", str(cap), "--format", "json"])
    doc = json.loads(res.output, parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    assert doc[0]["objects"] == 4
    res = run(cli, ["web", "pages", str(cap), "--objects", "--format", "csv"])
    assert res.output.splitlines()[0].startswith("page,client,page_url,connection,protocol,method,url,status")
    assert len(res.output.splitlines()) == 5
    res = run(cli, ["web", "pages", str(SAMPLES / "mitmproxy.har")])
    assert res.exit_code == 0 and "index.html" in res.output


def test_har_of_an_https_capture_keeps_each_page_s_plt(tmp_path):
    """An HTTPS page has no entries (its objects are encrypted): its _plt is still written, and
    read back as the page's PLT (issue 22: `qoe web har` on HTTPS dropped it)."""
    jsonschema = pytest.importorskip("jsonschema")
    cap = SAMPLES / "tls13.pcap"
    out = tmp_path / "s.har"
    res = CliRunner().invoke(cli, ["web", "har", str(cap), "-o", str(out)])
    assert res.exit_code == 0, res.output
    har = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(har, json.loads((Path(__file__).parent / "har12.schema.json").read_text()))
    (page,) = page_loads(cap)
    assert har["log"]["entries"] == [] and har["log"]["pages"][0]["_plt"] == pytest.approx(page.plt_s * 1e3)
    (again,) = pages_from_har(read_har(out))
    assert again.plt_s == pytest.approx(page.plt_s, abs=1e-6) and any("_plt" in n for n in again.notes)


def _two_fetches(tmp_path: Path, *, sni: bytes, keep_fin: bool) -> Path:
    """tls13.pcap (curl fetching https://www.example.test/) and, 0.5 s after its last packet,
    tls12.pcap (curl again) with its ClientHello's server name replaced by ``sni`` (as long);
    ``keep_fin=False`` drops tls13's FIN segments (its connection then stays open to the end of
    the capture, as a browser holds its sockets). One client, 127.0.0.1."""
    import dpkt

    def packets(name: str) -> list[tuple[float, bytes]]:
        with open(SAMPLES / name, "rb") as f:
            return [(ts, bytes(buf)) for ts, buf in dpkt.pcap.Reader(f)]

    first, second = packets("tls13.pcap"), packets("tls12.pcap")
    if not keep_fin:
        first = [(ts, b) for ts, b in first
                 if not dpkt.ethernet.Ethernet(b).data.data.flags & dpkt.tcp.TH_FIN]
    shift = first[-1][0] + 0.5 - second[0][0]
    hello = next(i for i, (_, b) in enumerate(second) if b"www.example.test" in b)
    assert len(sni) == len(b"www.example.test")
    second[hello] = (second[hello][0], second[hello][1].replace(b"www.example.test", sni))
    out = tmp_path / "two.pcap"
    with open(out, "wb") as f:
        w = dpkt.pcap.Writer(f)
        for ts, b in sorted(first + [(ts + shift, b) for ts, b in second], key=lambda p: p[0]):
            w.writepkt(b, ts=ts)
    return out


def test_a_fetch_of_another_server_after_the_client_closed_the_page_is_a_page(tmp_path):
    """Without keys, a TLS connection to another server name (its SNI) 0.5 s after a page (within
    the 2 s idle gap) starts a page when the client closed the page's connection first (curl
    exited); while the page's connection is held open (its FINs removed: as a browser keeps its
    sockets, whose script fetches to another origin come after the load) it is the same page; to
    the same server it is the same page either way (the idle gap)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        apart = page_loads(_two_fetches(tmp_path, sni=b"api.example.test", keep_fin=True))
        held = page_loads(_two_fetches(tmp_path, sni=b"api.example.test", keep_fin=False))
        same = page_loads(_two_fetches(tmp_path, sni=b"www.example.test", keep_fin=True))
        streamed = list(iter_page_loads(_two_fetches(tmp_path, sni=b"api.example.test", keep_fin=True)))
    assert [(p.url, p.objects) for p in apart] == [("https://www.example.test/", 1), ("https://api.example.test/", 1)]
    assert streamed == apart
    assert [(p.url, p.objects, p.connections) for p in held] == [("https://www.example.test/", 2, 2)]
    assert [(p.url, p.objects) for p in same] == [("https://www.example.test/", 2)]
    # the held page ends at the second fetch's last byte (tls12.pcap's last server data, shifted)
    assert held[0].end_ns == apart[1].end_ns and held[0].plt_s > apart[0].plt_s + 0.5


def test_page_notes_count_the_tls_connections_as_the_connection_results_show_them():
    """Each kind of TLS connection the notes of a page count (opened and never used without
    keys; objects hidden without keys; opened and never used, decrypted) is the number of its
    connections whose public TLS facts say so (``connection_results``), with and without the
    key log (data/web/resume/h2-hrr: a connection given up after a HelloRetryRequest)."""
    from qoe.web.http import connection_results

    cap = Path(__file__).resolve().parents[2] / "data" / "web" / "resume" / "h2-hrr.pcap"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pages = page_loads(cap)
        keyed = page_loads(cap, options=WebOptions(keylog=str(cap.with_suffix(".keylog"))))
        tls = {r.connection.index: r.tls for r in connection_results(cap) if r.tls is not None}
    silent = {i for i, s in tls.items() if s.complete and s.handshake_end_ns is not None
              and s.client_first_app_data_ns is None}
    assert silent and len(silent) < len(tls)  # the capture shows both kinds

    def counted(notes, words):
        return sum(int(n.split(" ", 1)[0]) for n in notes if words in n)

    notes = [n for p in pages for n in p.notes]
    assert counted(notes, "opened and never used (without keys") == len(silent)
    assert sum(int(n.split(": ", 1)[1].split(" ", 1)[0]) for n in notes if n.startswith("encrypted without keys")) \
        == len(tls) - len(silent)
    assert counted(notes, "(decrypted: no request inside") == 0
    assert not [n for p in keyed for n in p.notes if "without keys" in n]
