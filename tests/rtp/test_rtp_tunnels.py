"""RTP streams carry the tunnels they came through, and a tunnel's identifier keeps apart
subscribers that reuse private inner addresses (issue 13).

Samples: ``data/capture/tunnels/`` (see its make_crafted.py and make_vxlan.sh). The
two-subscriber GTP-U capture is not committed: ``python3 make_crafted.py --gtpu-subscribers
OUT.pcap`` writes it from inner.pcap (every inner frame twice, in two subscribers' tunnels:
TEIDs 0x1000/0x1001 and 0x2000/0x2001), so its expected streams are known by construction.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

import qoe
from qoe.errors import QoEWarning
from qoe.rtp import scan_capture
from qoe_cli.main import cli

TUNNELS = Path(__file__).resolve().parents[2] / "data" / "capture" / "tunnels"
TSHARK = shutil.which("tshark")
tshark_only = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")


def _streams_json(path: Path) -> list[dict]:
    res = CliRunner().invoke(cli, ["streams", str(path), "--format", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return json.loads(res.output)["streams"]


@pytest.fixture(scope="module")
def subscribers(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gtpu") / "subscribers.pcap"
    subprocess.run([sys.executable, str(TUNNELS / "make_crafted.py"), "--gtpu-subscribers", str(out)],
                   check=True, capture_output=True)
    return out


@tshark_only
@pytest.mark.parametrize(("name", "field", "fmt"), [
    ("gtpu.pcap", "gtp.teid", lambda v: f"gtp-u[teid={v}]"),
    ("vxlan.pcap", "vxlan.vni", lambda v: f"vxlan[vni={v}]"),
    ("gre.pcap", "gre.key", lambda v: f"gre[key={int(v, 16)}]"),
    ("mpls.pcap", "mpls.label", lambda v: f"mpls[labels={v}]"),
])
def test_streams_show_their_encapsulation(name, field, fmt):
    """``qoe streams FILE --format json``: each stream's ``encapsulation`` is the tunnel of
    its packets, as ``tshark -r FILE -Y "udp.srcport==SPORT && udp.dstport==DPORT" -T fields
    -E occurrence=a -E aggregator=, -e FIELD`` reads it (one value per stream)."""
    path = TUNNELS / name
    streams = _streams_json(path)
    assert streams
    for s in streams:
        out = subprocess.run([TSHARK, "-r", str(path), "-Y", f"udp.srcport=={s['sport']} && udp.dstport=={s['dport']}",
                              "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,", "-e", field],
                             capture_output=True, text=True, check=True).stdout
        values = {v for v in out.split() if v}
        assert len(values) == 1
        assert s["encapsulation"] == fmt(values.pop())


def test_text_table_has_the_column_only_with_tunnels():
    run = CliRunner().invoke
    tunnelled = run(cli, ["streams", str(TUNNELS / "gtpu.pcap")], catch_exceptions=False).output
    plain = run(cli, ["streams", str(TUNNELS / "inner.pcap")], catch_exceptions=False).output
    assert "encapsulation" in tunnelled and "gtp-u[teid=0x00001001]" in tunnelled
    assert "encapsulation" not in plain


def test_inner_capture_streams_are_not_encapsulated():
    scan = scan_capture(TUNNELS / "inner.pcap", keep_packets=False)
    assert scan.streams and all(s.key.encapsulation == "" for s in scan.streams)
    assert all(" via " not in str(s.key) for s in scan.streams)


def test_two_gtpu_subscribers_with_one_inner_address_are_two_streams(subscribers):
    """Each inner RTP stream of inner.pcap is there twice, once per TEID: twice as many
    streams, each with the inner stream's packets and statistics (by construction)."""
    inner = {(str(s.key.src), s.key.sport, s.key.dport, s.ssrc): s for s in scan_capture(TUNNELS / "inner.pcap").streams
             if s.key.dport != 5006}  # the inner-fragmented L16 stream is not wrapped (make_crafted.py)
    scan = scan_capture(subscribers)
    assert len(scan.streams) == 2 * len(inner) == 4
    by_inner = Counter((s.key.src, s.key.sport, s.key.dport, s.ssrc) for s in scan.streams)
    assert set(by_inner) == set(inner) and set(by_inner.values()) == {2}
    for s in scan.streams:
        ref = inner[(s.key.src, s.key.sport, s.key.dport, s.ssrc)]
        assert s.key.encapsulation in {"gtp-u[teid=0x00001001]", "gtp-u[teid=0x00002001]"}
        assert (s.stats.packets, s.stats.lost, s.stats.duplicates) == (ref.stats.packets, 0, 0)
        assert s.stats.max_jitter_ms == pytest.approx(ref.stats.max_jitter_ms, abs=1e-9)
    assert len({s.key for s in scan.streams}) == 4


@tshark_only
def test_tshark_merges_the_two_subscribers(subscribers):
    """``tshark -r subscribers.pcap -q --enable-heuristic rtp_udp -z rtp,streams`` keys a
    stream on addresses, ports and SSRC only: it shows each pair as one stream with both
    subscribers' packets (90, "lost" -45); qoe shows two streams of 45."""
    out = subprocess.run([TSHARK, "-r", str(subscribers), "-q", "--enable-heuristic", "rtp_udp", "-z", "rtp,streams"],
                         capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in out.splitlines() if " 0x" in line]
    assert len(rows) == 2 and {int(r[8]) for r in rows} == {90} and {r[9] for r in rows} == {"-45"}
    assert sorted(s["packets"] for s in _streams_json(subscribers)) == [45, 45, 45, 45]


def test_report_names_the_tunnel(subscribers):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QoEWarning)
        report = qoe.score(subscribers, kind="voice")
    names = {d.stream for d in report}
    assert len(names) == 4 and all(" via gtp-u[teid=0x0000" in n for n in names)
