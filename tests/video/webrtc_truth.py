"""The truth of the real WebRTC calls in data/video/webrtc/calls, for tests.

Each call folder (made by ``data/video/webrtc/make_calls.py``; README.md there) holds the
browsers' own ``pc.getStats()`` series of both peers (``stats_a.json.gz``, ``stats_b.json.gz``),
the forwarder's log of every RTP packet it dropped or held (``forwarder.jsonl``, loss and
reorder calls),
the captures (``b.pcap`` at peer B, ``a.pcap`` at peer A for some calls) and ``call.json``.
Peer A made the offer; A's media reaches B through the router (where loss is made), B's media
reaches A the same way, and both directions pass B's interface.

What Chromium 156's counters mean, checked on these calls (README.md, "What getStats counts"):

* ``inbound-rtp.packetsReceived`` counts the media SSRC's packets *and* the RTX packets
  received for it (RFC 4588; ``retransmittedPacketsReceived`` is the RTX share), so the
  media SSRC's own packets are ``packetsReceived - retransmittedPacketsReceived``;
  ``outbound-rtp.packetsSent`` likewise counts RTX packets sent.
* ``inbound-rtp.packetsLost`` is RFC 3550's cumulative count on the media SSRC (expected minus
  received, with packets older than the first received counted as received but not
  expected, RFC 3550 A.3): a packet dropped and then repaired by RTX still counts as lost.
* Frames: the media SSRC's distinct RTP timestamps in the receiver's capture = ``framesDecoded``
  (= the sender's ``framesSent`` when RTX repaired every loss: all calls here); the marker bit
  is missing on frames whose last packet was lost and never repaired in time.
* ``jitter`` is in seconds (W3C webrtc-stats ``RTCReceivedRtpStreamStats.jitter``), at
  millisecond resolution.

Importable from any test: pytest's ``pythonpath`` includes ``tests/`` (``from video import
webrtc_truth``).
"""

from __future__ import annotations

import gzip
import json
import struct
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

CALLS = Path(__file__).resolve().parents[2] / "data" / "video" / "webrtc" / "calls"
PEERS = {"a": "192.0.2.2", "b": "198.51.100.2"}  # make_calls.py's A_IP, B_IP


@dataclass(frozen=True)
class Direction:
    """One media stream of a call, sender -> receiver, as both browsers' final counters say it.

    ``ssrc``/``rtx_ssrc`` come from the sender's ``outbound-rtp`` and equal the receiver's
    ``inbound-rtp`` ``ssrc``/``rtxSsrc`` (checked when built).
    """

    call: str
    sender: str  # "a" or "b"
    receiver: str
    kind: str  # "audio" or "video"
    ssrc: int
    rtx_ssrc: int | None
    outbound: dict[str, Any]  # the sender's final outbound-rtp
    inbound: dict[str, Any]  # the receiver's final inbound-rtp
    codec: dict[str, Any]  # the receiver's codec stats entry (mimeType, payloadType, clockRate)

    @property
    def src(self) -> str:
        return PEERS[self.sender]

    @property
    def dst(self) -> str:
        return PEERS[self.receiver]

    @property
    def media_packets_received(self) -> int:
        """The media SSRC's own packets that arrived (RTX packets taken out)."""
        return self.inbound["packetsReceived"] - self.inbound.get("retransmittedPacketsReceived", 0)


@dataclass(frozen=True)
class Call:
    """One call folder."""

    name: str
    path: Path
    meta: dict[str, Any]

    @property
    def codec(self) -> str:
        return self.meta["codec"]

    @property
    def condition(self) -> str:
        return self.meta["condition"]

    @property
    def encrypted(self) -> bool:
        """DTLS-SRTP (every call but the one made with Chromium's --disable-webrtc-encryption)."""
        return "--disable-webrtc-encryption" not in self.meta.get("chromium_flags", [])

    def capture(self, side: str = "b") -> Path:
        return self.path / f"{side}.pcap"

    def has_capture(self, side: str) -> bool:
        return self.capture(side).is_file()

    @property
    def offer(self) -> Path:
        return self.path / "offer.sdp"

    @property
    def answer(self) -> Path:
        return self.path / "answer.sdp"

    def series(self, side: str) -> list[dict[str, Any]]:
        """The getStats samples of one peer: ``{"label", "wall_ms", "stats": [...]}``, one a second."""
        return _series(self.path / f"stats_{side}.json.gz")

    def final(self, side: str) -> dict[str, dict[str, Any]]:
        """The last sample (taken after both peers stopped sending and 2 s of drain), by stats id."""
        return {s["id"]: s for s in self.series(side)[-1]["stats"]}

    def directions(self) -> list[Direction]:
        """Every media stream of the call (A->B and B->A, audio and video)."""
        out = []
        for sender, receiver in (("a", "b"), ("b", "a")):
            sent, got = self.final(sender), self.final(receiver)
            for kind in ("audio", "video"):
                for ob in _all(sent, "outbound-rtp", kind):  # one per transceiver (vp8-two-video: 2 video)
                    ib = next(s for s in got.values() if s["type"] == "inbound-rtp" and s["ssrc"] == ob["ssrc"])
                    if ib.get("rtxSsrc") != ob.get("rtxSsrc"):
                        raise AssertionError(f"{self.name}: RTX SSRC differs between the peers: {ob} {ib}")
                    out.append(Direction(self.name, sender, receiver, kind, ob["ssrc"], ob.get("rtxSsrc"),
                                         ob, ib, got[ib["codecId"]]))
        return out

    def direction(self, sender: str, kind: str) -> Direction:
        return next(d for d in self.directions() if d.sender == sender and d.kind == kind)

    def forwarder(self) -> list[dict[str, Any]]:
        """The forwarder's log (loss calls): start line, one line per dropped or held packet, summary."""
        path = self.path / "forwarder.jsonl"
        if not path.is_file():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def dropped(self, ssrc: int) -> list[dict[str, Any]]:
        """The packets of one SSRC the forwarder dropped (each with its ``seq``)."""
        return [e for e in self.forwarder() if e["event"] == "drop" and e["ssrc"] == ssrc]

    def held(self, ssrc: int) -> list[dict[str, Any]]:
        """The packets of one SSRC the forwarder delayed by ``extra_ms`` (reordered)."""
        return [e for e in self.forwarder() if e["event"] == "hold" and e["ssrc"] == ssrc]


def rtp_headers(capture: Path) -> dict[int, list[tuple[float, int, int, int]]]:
    """Every RTP packet of a capture by SSRC: (capture time s, sequence number, RTP timestamp, marker).

    Read with dpkt, independently of qoe: RFC 7983 §7 first byte 128-191, RTCP packet types
    192-223 (RFC 5761 §4) left out. The clear RTP header of SRTP (RFC 3711 §3.1).
    """
    return _rtp_headers(Path(capture))


@cache
def _rtp_headers(capture: Path) -> dict[int, list[tuple[float, int, int, int]]]:
    import dpkt  # the test extra's; imported here so that the module loads without it

    out: dict[int, list[tuple[float, int, int, int]]] = {}
    with open(capture, "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            p = bytes(dpkt.ethernet.Ethernet(buf).data.data.data)
            if len(p) >= 12 and 128 <= p[0] <= 191 and not 192 <= p[1] <= 223:
                seq, rtp_ts, ssrc = struct.unpack_from("!HII", p, 2)
                out.setdefault(ssrc, []).append((float(ts), seq, rtp_ts, p[1] >> 7))
    return out


def one_way_delays_ms(c: Call, d: Direction) -> dict[int, float]:
    """True one-way delay (ms) of each media packet of ``d`` that reached the receiver, by sequence number.

    From the captures at both peers (same host clock, TESTBED.md): receiver capture time minus
    sender capture time, matched by (SSRC, sequence number); the truth for queueing delay
    (``vp8-bulk``: the uplink buffer) and for delay variation from header extensions
    (abs-send-time, transport-wide-cc). Needs both captures (``vp8-loss``, ``h264-loss``,
    ``vp8-bulk``). Sequence numbers do not wrap within these 10 s calls (checked).
    """
    sent = {seq: t for t, seq, _, _ in rtp_headers(c.capture(d.sender))[d.ssrc]}
    got = {seq: t for t, seq, _, _ in rtp_headers(c.capture(d.receiver))[d.ssrc]}
    if len(sent) != len(rtp_headers(c.capture(d.sender))[d.ssrc]):
        raise AssertionError(f"{c.name}: sequence numbers of {d.ssrc:#x} repeat")
    return {seq: (got[seq] - sent[seq]) * 1000.0 for seq in sorted(got) if seq in sent}


def samples(c: Call, side: str, ssrc: int, stats_type: str = "inbound-rtp") -> list[tuple[int, dict[str, Any]]]:
    """One RTP stream's stats in every sample of one peer: (wall-clock ms, stats), one a second."""
    return [(smp["wall_ms"], s) for smp in c.series(side) for s in smp["stats"]
            if s["type"] == stats_type and s.get("ssrc") == ssrc]


def _all(stats: dict[str, dict[str, Any]], kind_type: str, kind: str) -> list[dict[str, Any]]:
    found = sorted((s for s in stats.values() if s["type"] == kind_type and s["kind"] == kind),
                   key=lambda s: s.get("mid") or "")
    if not found:
        raise AssertionError(f"expected a {kind} {kind_type}, found none")
    return found


@cache
def _series(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        return json.load(f)


# Calls made with more than the defaults (make_calls.py CALL_OPTIONS), tested for what they add:
# VP9 with two spatial layers (encrypted, and plain RTP with its payload descriptors), and two
# video transceivers (two m=video sections sharing payload types). Left out of calls(): the
# other tests' tolerances were set on the ten one-codec calls (the SVC calls encode 640x480 on
# a loaded machine: the browsers' audio jitter there is twice the capture's).
SPECIAL = frozenset({"vp9-svc", "vp9-svc-plain", "vp8-two-video"})


@cache
def all_calls() -> tuple[Call, ...]:
    """Every call folder present, in name order (empty when the data are absent)."""
    if not CALLS.is_dir():
        return ()
    return tuple(Call(p.name, p, json.loads((p / "call.json").read_text()))
                 for p in sorted(CALLS.iterdir()) if (p / "call.json").is_file())


def calls() -> tuple[Call, ...]:
    """The ten calls of one video codec per network condition (:data:`SPECIAL` left out)."""
    return tuple(c for c in all_calls() if c.name not in SPECIAL)


def call(name: str) -> Call:
    return next(c for c in all_calls() if c.name == name)
