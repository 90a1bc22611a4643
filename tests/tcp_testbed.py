"""A three-namespace bottleneck for making real TCP captures in tests (root, ip, tc, tcpdump).

client (192.0.2.2, 2001:db8:1::2) <-> router <-> server (198.51.100.2, 2001:db8:2::2), two
veth pairs, addresses from the documentation ranges (RFC 5737, RFC 3849), tbf shaping on the
router's two egress interfaces (/work/shared/TESTBED.md: tbf counts the Ethernet header, so
``limit = N x 1514`` bytes holds N full-size frames; ``gso_max_segs 1`` so TCP sends
normal-size packets). Everything the testbed starts is stopped by pid and the namespaces
are deleted on ``close()``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

FRAME = 1514  # full-size Ethernet frame, what tbf counts per packet
CLIENT4, SERVER4 = "192.0.2.2", "198.51.100.2"
CLIENT6, SERVER6 = "2001:db8:1::2", "2001:db8:2::2"


def available() -> str | None:
    """None when a testbed can be built here, else why not."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "tc", "tcpdump", "curl"):
        if shutil.which(tool) is None:
            return f"needs {tool}"
    return None


class Testbed:
    """client <-> router <-> server namespaces; ``run``/``popen`` in one of them by role."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir)
        tag = f"qtcp{os.getpid()}"
        self.ns = {"client": tag + "c", "router": tag + "r", "server": tag + "s"}
        self._procs: list[subprocess.Popen] = []
        try:
            self._up()
        except BaseException:
            self.close()
            raise

    def _ip(self, *args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True)

    def _up(self) -> None:
        c, r, s = self.ns["client"], self.ns["router"], self.ns["server"]
        for ns in (c, r, s):
            self._ip("netns", "add", ns)
            self._ip("-n", ns, "link", "set", "lo", "up")
        self._ip("link", "add", "c0", "netns", c, "type", "veth", "peer", "name", "rc0", "netns", r)
        self._ip("link", "add", "s0", "netns", s, "type", "veth", "peer", "name", "rs0", "netns", r)
        for ns, dev in ((c, "c0"), (s, "s0"), (r, "rc0"), (r, "rs0")):
            self._ip("-n", ns, "link", "set", dev, "gso_max_segs", "1", "up")
        self._ip("-n", c, "addr", "add", f"{CLIENT4}/24", "dev", "c0")
        self._ip("-n", r, "addr", "add", "192.0.2.1/24", "dev", "rc0")
        self._ip("-n", r, "addr", "add", "198.51.100.1/24", "dev", "rs0")
        self._ip("-n", s, "addr", "add", f"{SERVER4}/24", "dev", "s0")
        self._ip("-n", c, "-6", "addr", "add", f"{CLIENT6}/64", "dev", "c0", "nodad")
        self._ip("-n", r, "-6", "addr", "add", "2001:db8:1::1/64", "dev", "rc0", "nodad")
        self._ip("-n", r, "-6", "addr", "add", "2001:db8:2::1/64", "dev", "rs0", "nodad")
        self._ip("-n", s, "-6", "addr", "add", f"{SERVER6}/64", "dev", "s0", "nodad")
        self._ip("-n", c, "route", "add", "default", "via", "192.0.2.1")
        self._ip("-n", s, "route", "add", "default", "via", "198.51.100.1")
        self._ip("-n", c, "-6", "route", "add", "default", "via", "2001:db8:1::1")
        self._ip("-n", s, "-6", "route", "add", "default", "via", "2001:db8:2::1")
        self.run("router", "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")

    # -- running things ----------------------------------------------------------------------

    def run(self, role: str, *cmd: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["ip", "netns", "exec", self.ns[role], *cmd], check=check, capture_output=True, text=True,
            timeout=timeout, cwd=self.workdir,
        )

    def popen(self, role: str, *cmd: str, **kw) -> subprocess.Popen:
        p = subprocess.Popen(["ip", "netns", "exec", self.ns[role], *cmd], cwd=self.workdir, **kw)
        self._procs.append(p)
        return p

    def stop(self, p: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def tc(self, *args: str) -> None:
        self.run("router", "tc", *args)

    def shape(self, dev: str, rate: str, packets: int) -> None:
        """tbf on a router interface: ``rate``, a 2-frame burst, a buffer of ``packets`` frames."""
        self.run("router", "tc", "qdisc", "del", "dev", dev, "root", check=False)
        self.tc("qdisc", "add", "dev", dev, "root", "handle", "1:", "tbf", "rate", rate, "burst", str(2 * FRAME),
                "limit", str(packets * FRAME))

    @contextlib.contextmanager
    def capture(self, role: str, dev: str, path: Path, *, snaplen: int = 0):
        """tcpdump (immediate mode, TESTBED.md) on ``dev`` of ``role`` into ``path``, TCP only."""
        # -B: a 16 MiB kernel buffer, so that a busy machine drops fewer packets from the capture
        cmd = ["tcpdump", "-i", dev, "--immediate-mode", "-U", "-B", "16384", "-s", str(snaplen), "-w", str(path), "tcp"]
        p = self.popen(role, *cmd, stderr=subprocess.PIPE, text=True)
        # tcpdump says "listening on ..." once the capture is open (after other notes, for "any")
        seen = []
        for _ in range(5):
            seen.append(p.stderr.readline())
            if "listening" in seen[-1] or not seen[-1]:
                break
        if "listening" not in seen[-1]:
            self.stop(p)
            raise RuntimeError(f"tcpdump did not start: {''.join(seen)!r}")
        try:
            yield path
        finally:
            time.sleep(0.3)  # the last packets in flight
            self.stop(p, signal.SIGINT)
            p.stderr.close()

    def close(self) -> None:
        for p in self._procs:
            with contextlib.suppress(Exception):
                self.stop(p)
        for ns in self.ns.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


# -- the captures tests/web/test_tcp_captures.py checks ----------------------------------------

BIG = 1_000_000  # bytes of the bulk download (about 1 s at 8 Mbit/s)
SMALL = 200_000
PORT = 8000
REUSED_PORT = 47123  # the client port both connections of the "reuse" capture use


def _curl(bed: Testbed, url: str, *extra: str, check: bool = True) -> str:
    r = bed.run("client", "curl", "-g", "-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", *extra, url,
                check=check)
    return r.stdout


def make_tcp_captures(workdir: Path) -> dict[str, Path]:
    """Run every scenario through one testbed; returns capture name -> pcap path.

    - ``loss`` (+ ``loss-snap96``, ``loss-server``, ``loss-router-any``): HTTP/1.0 GET of
      1 MB over IPv4 through tbf 8 Mbit/s with an 8-frame buffer (drops, SACK recovery),
      captured at the client (full and ``tcpdump -s 96``), at the server, and in the router
      on the "any" device (Linux cooked capture: every forwarded packet twice, on the way
      in and, after the queue, on the way out; the dropped ones once).
    - ``loss6``: the same over IPv6, captured at the client.
    - ``reorder``: 300 kB through htb with two classes, 8 and 4 Mbit/s, the second taking
      the segments whose sequence number has bit 10 set (u32 match at IP offset 24):
      reordering, no loss.
    - ``reuse``: two GETs from the same client port (curl ``--local-port``): one 4-tuple, two
      connections.
    - ``rst``: curl gives up after 0.4 s (``--max-time``) during the 1 MB download: RST.
    - ``outage`` (+ ``outage-server``): the router drops everything towards the client for
      1.2 s in the middle of the download (a blackhole route): timeout retransmissions,
      which the client-side capture cannot tell from new data.
    - ``synloss``: the router drops the client's first SYN (blackhole route for 0.5 s): a
      SYN retransmission after 1 s (RFC 6298 §2.1 initial RTO).
    """
    workdir = Path(workdir)
    www = workdir / "www"
    www.mkdir(exist_ok=True)
    rnd = os.urandom(BIG)
    (www / "big.bin").write_bytes(rnd)
    (www / "small.bin").write_bytes(rnd[:SMALL])
    (www / "mid.bin").write_bytes(rnd[:300_000])
    out: dict[str, Path] = {}
    bed = Testbed(workdir)
    try:
        bed.shape("rc0", "8mbit", 8)
        bed.shape("rs0", "1mbit", 64)
        srv = bed.popen("server", "python3", "-m", "http.server", "-b", "::", str(PORT), "-d", str(www),
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):  # until the server listens
            if "200" in _curl(bed, f"http://{SERVER4}:{PORT}/small.bin", "-r", "0-0", check=False):
                break
            time.sleep(0.05)
        url4 = f"http://{SERVER4}:{PORT}"
        url6 = f"http://[{SERVER6}]:{PORT}"

        p = {k: workdir / f"{k}.pcap" for k in ("loss", "loss-snap96", "loss-server", "loss-router-any")}
        with bed.capture("client", "c0", p["loss"]), bed.capture("client", "c0", p["loss-snap96"], snaplen=96), \
                bed.capture("server", "s0", p["loss-server"]), bed.capture("router", "any", p["loss-router-any"]):
            _curl(bed, f"{url4}/big.bin")
        out.update(p)

        out["loss6"] = workdir / "loss6.pcap"
        with bed.capture("client", "c0", out["loss6"]):
            _curl(bed, f"{url6}/big.bin")

        # reordering: htb with two classes, segments whose sequence number has bit 10 set
        # (u32 match at IP offset 24) in the slower one
        bed.run("router", "tc", "qdisc", "del", "dev", "rc0", "root", check=False)
        bed.tc("qdisc", "add", "dev", "rc0", "root", "handle", "1:", "htb", "default", "10")
        bed.tc("class", "add", "dev", "rc0", "parent", "1:", "classid", "1:10", "htb", "rate", "8mbit", "ceil", "8mbit")
        bed.tc("class", "add", "dev", "rc0", "parent", "1:", "classid", "1:20", "htb", "rate", "4mbit", "ceil", "4mbit")
        for cls in ("10", "20"):
            bed.tc("qdisc", "add", "dev", "rc0", "parent", f"1:{cls}", "handle", f"{cls}:", "pfifo", "limit", "1000")
        bed.tc("filter", "add", "dev", "rc0", "parent", "1:", "protocol", "ip", "prio", "1", "u32", "match", "u32",
               "0x00000400", "0x00000400", "at", "24", "flowid", "1:20")
        out["reorder"] = workdir / "reorder.pcap"
        with bed.capture("client", "c0", out["reorder"]):
            _curl(bed, f"{url4}/mid.bin")
        bed.shape("rc0", "8mbit", 8)

        out["reuse"] = workdir / "reuse.pcap"
        with bed.capture("client", "c0", out["reuse"]):
            _curl(bed, f"{url4}/small.bin", "--local-port", str(REUSED_PORT))
            time.sleep(0.2)
            _curl(bed, f"{url4}/small.bin", "--local-port", str(REUSED_PORT))

        out["rst"] = workdir / "rst.pcap"
        with bed.capture("client", "c0", out["rst"]):
            _curl(bed, f"{url4}/big.bin", "--max-time", "0.4", check=False)

        # an outage: the router drops everything towards the client for 1.2 s in mid-transfer
        # (a blackhole route; this kernel has neither netem nor the tc drop action)
        bed.shape("rc0", "8mbit", 64)
        p = {k: workdir / f"{k}.pcap" for k in ("outage", "outage-server")}
        with bed.capture("client", "c0", p["outage"]), bed.capture("server", "s0", p["outage-server"]):
            dl = bed.popen("client", "curl", "-s", "-o", "/dev/null", f"{url4}/big.bin")
            time.sleep(0.3)
            bed.run("router", "ip", "route", "add", "blackhole", f"{CLIENT4}/32")
            time.sleep(1.2)
            bed.run("router", "ip", "route", "del", "blackhole", f"{CLIENT4}/32")
            dl.wait(timeout=30)
        out.update(p)

        # the client's first SYN dropped at the router (blackhole towards the server)
        bed.run("router", "ip", "route", "add", "blackhole", f"{SERVER4}/32")
        out["synloss"] = workdir / "synloss.pcap"
        with bed.capture("client", "c0", out["synloss"]):
            dl = bed.popen("client", "curl", "-s", "-o", "/dev/null", f"{url4}/small.bin")
            time.sleep(0.5)
            bed.run("router", "ip", "route", "del", "blackhole", f"{SERVER4}/32")
            dl.wait(timeout=30)
        bed.stop(srv)
    finally:
        bed.close()
    return out



# -- fixtures (imported by tests/web/test_tcp_captures.py) and tshark's view --------------------


@pytest.fixture(scope="session")
def tcp_captures(tmp_path_factory) -> dict[str, Path]:
    """name -> pcap made by tcp_testbed.make_tcp_captures (curl + http.server through tbf)."""
    why = available()
    if why:
        pytest.skip(f"real TCP captures: {why}")
    return make_tcp_captures(tmp_path_factory.mktemp("tcpcaps"))


def epoch_ns(text: str) -> int:
    """tshark's frame.time_epoch ("1700000000.123456000") as integer ns, exactly."""
    sec, _, frac = text.partition(".")
    return int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])


def seconds_ns(text: str) -> int:
    """A tshark duration field ("0.000079000") as integer ns, exactly."""
    return epoch_ns(text)


@dataclass
class TsharkTcp:
    """Per-frame TCP analysis of one capture by tshark."""

    retransmission: set[int]
    fast_retransmission: set[int]
    out_of_order: set[int]
    spurious: set[int]
    initial_rtt_ns: dict[int, int]  # tcp.stream -> initial RTT
    ack_rtt_ns: dict[int, int]  # capture time of the ACK -> its ack_rtt
    streams: int
    rows: list[dict[str, str]]


TSHARK_FIELDS = [
    "frame.number", "frame.time_epoch", "tcp.stream", "tcp.srcport", "tcp.seq_raw", "tcp.len",
    "tcp.options.timestamp.tsval", "tcp.analysis.retransmission", "tcp.analysis.fast_retransmission",
    "tcp.analysis.out_of_order", "tcp.analysis.spurious_retransmission", "tcp.analysis.initial_rtt",
    "tcp.analysis.ack_rtt",
]


def tshark_tcp(path: Path) -> TsharkTcp:
    """``tshark -r PATH -T fields -E separator=; -e frame.number -e frame.time_epoch -e tcp.stream
    -e tcp.srcport -e tcp.seq_raw -e tcp.len -e tcp.options.timestamp.tsval
    -e tcp.analysis.retransmission -e tcp.analysis.fast_retransmission -e tcp.analysis.out_of_order
    -e tcp.analysis.spurious_retransmission -e tcp.analysis.initial_rtt -e tcp.analysis.ack_rtt``
    (tshark 4.0 with its default TCP preferences: relative sequence numbers, analysis on)."""
    if shutil.which("tshark") is None:
        pytest.skip("needs tshark")
    cmd = ["tshark", "-r", str(path), "-T", "fields", "-E", "separator=;"]
    for f in TSHARK_FIELDS:
        cmd += ["-e", f]
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = [dict(zip(TSHARK_FIELDS, line.split(";"))) for line in text.splitlines()]
    flag = lambda name: {int(r["frame.number"]) for r in rows if r[name]}  # noqa: E731
    return TsharkTcp(
        retransmission=flag("tcp.analysis.retransmission"),
        fast_retransmission=flag("tcp.analysis.fast_retransmission"),
        out_of_order=flag("tcp.analysis.out_of_order"),
        spurious=flag("tcp.analysis.spurious_retransmission"),
        initial_rtt_ns={int(r["tcp.stream"]): seconds_ns(r["tcp.analysis.initial_rtt"])
                        for r in rows if r["tcp.analysis.initial_rtt"]},
        ack_rtt_ns={epoch_ns(r["frame.time_epoch"]): seconds_ns(r["tcp.analysis.ack_rtt"])
                    for r in rows if r["tcp.analysis.ack_rtt"]},
        streams=len({r["tcp.stream"] for r in rows}),
        rows=rows,
    )


@pytest.fixture(scope="session")
def tshark_of(tcp_captures):
    """name -> TsharkTcp, computed once per capture."""
    cache: dict[str, TsharkTcp] = {}

    def get(name: str) -> TsharkTcp:
        if name not in cache:
            cache[name] = tshark_tcp(tcp_captures[name])
        return cache[name]

    return get


if __name__ == "__main__":  # make the captures into a directory, to look at them
    import sys

    for name, path in make_tcp_captures(Path(sys.argv[1])).items():
        print(name, path, path.stat().st_size)
