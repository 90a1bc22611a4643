"""``read_udp_batches``: UDP datagrams in NumPy columns, for large captures."""

from __future__ import annotations

import operator
from collections.abc import Iterator

import numpy as np

from qoe.capture._decode import IPPROTO_UDP, Decoder
from qoe.capture._files import PathOrFile, probe, records
from qoe.capture._types import UdpBatch
from qoe.errors import InputError


class AddressBook:
    """Address text ↔ small integer code, stable for one read."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.texts: list[str] = []
        self._snapshot: tuple[str, ...] = ()

    def code(self, text: str) -> int:
        c = self.codes.get(text)
        if c is None:
            c = self.codes[text] = len(self.texts)
            self.texts.append(text)
        return c

    def snapshot(self) -> tuple[str, ...]:
        if len(self._snapshot) != len(self.texts):
            self._snapshot = tuple(self.texts)
        return self._snapshot


def read_udp_batches(path: PathOrFile, *, batch_size: int = 65536) -> Iterator[UdpBatch]:
    """Stream the UDP datagrams of a capture as columns of NumPy arrays.

    Parameters
    ----------
    path : str, os.PathLike or binary file object
        A pcap or pcapng capture, as for :func:`~qoe.capture.read_packets`.
    batch_size : int, optional
        Datagrams per batch (every batch but the last is full).

    Yields
    ------
    UdpBatch
        Datagrams in frame order: the same datagrams, numbers, times and payloads as
        ``read_packets(path, protocols=("udp",))`` gives, in columns. Addresses are
        int32 codes into ``batch.addresses`` (stable over the whole read).

    Raises
    ------
    CaptureError
        As :func:`~qoe.capture.read_packets` (at the call).
    InputError
        ``batch_size`` is not a positive integer.

    Warns
    -----
    QoEWarning
        The file ends inside a record: what came before it is returned.

    References
    ----------
    .. [1] draft-ietf-opsawg-pcap §5; draft-ietf-opsawg-pcapng §4.3; RFC 791; RFC 768.
    """
    try:
        batch_size = operator.index(batch_size)
    except TypeError:
        raise InputError(f"batch_size must be a positive integer, given {batch_size!r}") from None
    if batch_size <= 0:
        raise InputError(f"batch_size must be a positive integer, given {batch_size}")
    probe(path)
    return _iter_batches(path, batch_size)


class _Columns:
    """Growing columns of one batch."""

    def __init__(self) -> None:
        self.index: list[int] = []
        self.ts: list[int] = []
        self.src: list[int] = []
        self.dst: list[int] = []
        self.sport: list[int] = []
        self.dport: list[int] = []
        self.payloads: list[bytes] = []
        self.iface: list[int] = []
        self.wire: list[int] = []

    def __len__(self) -> int:
        return len(self.index)

    def build(self, book: AddressBook) -> UdpBatch:
        lens = np.fromiter((len(p) for p in self.payloads), dtype=np.int64, count=len(self.payloads))
        offsets = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        payload = np.frombuffer(b"".join(self.payloads), dtype=np.uint8)
        return UdpBatch(
            index=np.asarray(self.index, dtype=np.int64),
            ts_ns=np.asarray(self.ts, dtype=np.int64),
            src=np.asarray(self.src, dtype=np.int32),
            dst=np.asarray(self.dst, dtype=np.int32),
            sport=np.asarray(self.sport, dtype=np.uint16),
            dport=np.asarray(self.dport, dtype=np.uint16),
            payload=payload,
            offsets=offsets,
            interface=np.asarray(self.iface, dtype=np.int32),
            wire_len=np.asarray(self.wire, dtype=np.int64),
            addresses=book.snapshot(),
        )


def _iter_batches(path: PathOrFile, batch_size: int) -> Iterator[UdpBatch]:
    decode = Decoder(frozenset({IPPROTO_UDP})).decode
    book = AddressBook()
    code = book.code
    cols = _Columns()
    for rec in records(path):
        pkt = decode(*rec)
        if pkt is None:
            continue
        cols.index.append(pkt.index)
        cols.ts.append(pkt.ts_ns)
        cols.src.append(code(pkt.src))
        cols.dst.append(code(pkt.dst))
        cols.sport.append(pkt.sport)
        cols.dport.append(pkt.dport)
        cols.payloads.append(pkt.payload)
        cols.iface.append(pkt.interface)
        cols.wire.append(pkt.wire_len)
        if len(cols) >= batch_size:
            yield cols.build(book)
            cols = _Columns()
    if len(cols):
        yield cols.build(book)
