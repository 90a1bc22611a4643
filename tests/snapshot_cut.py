"""Captures cut by a snapshot length, made from the bundled ones for the tests that need them.

:func:`cut_capture` writes what ``tcpdump -s SNAP`` (or ``editcap -s SNAP``) would have: every
record's captured length at most ``snap`` bytes, its original length kept, in a pcap file
whose header names the snapshot length.
"""

from __future__ import annotations

import struct
from pathlib import Path

import dpkt


def cut_capture(source: Path, out: Path, snap: int) -> None:
    """``source`` (a pcap file) with each record cut to ``snap`` bytes, written to ``out``."""
    with source.open("rb") as f, out.open("wb") as g:
        r = dpkt.pcap.Reader(f)
        g.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snap, r.datalink()))
        for ts, buf in r:
            sec = int(ts)
            g.write(struct.pack("<IIII", sec, round((ts - sec) * 1e6), min(len(buf), snap), len(buf)) + buf[:snap])
