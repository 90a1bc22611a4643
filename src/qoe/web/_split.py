"""Connections split between two processes: TCP reassembly and HTTP of a capture on two cores.

A page-load pass spends most of its time per connection (TCP reassembly, then HTTP/1.x or
the TLS timing reader; with a key log, TLS decryption and HTTP/1.x or HTTP/2 inside) and a
smaller part on the pages made of the connections' results. With two cores, :func:`connections` splits the connections: the
child of :func:`qoe.capture.read_ahead` reads the capture (:func:`qoe.capture.tcp_segment_chunks`)
and takes the connections whose :func:`qoe.capture.flow_bucket` is below ``share`` (both
directions of a connection have one bucket), this process the others, from the chunks the
child hands over (their columns in shared memory); each runs TCP reassembly and the
connections' protocol sinks (``qoe.web._dispatch.ProtocolSink``) on its own. The child records, with the frame
index of the segment that caused it, what the page model needs from its connections:

* each new connection (``NEW``: its 4-tuple, first time, whether its initiator is known),
  the first bytes of each (``STARTED``) and its protocol once decided (``DECIDED``);
* each final connection (what the page model reads of it, ``qoe.web._connresults.TcpView``,
  and its sink's result, pickled with its connection's index left for here to fill in: see
  ``_Reducers`` and ``_In``);

and sends them with each chunk of the file it read (this process makes its rows of the
chunk's columns: the file is read once). Here, before each segment of its own, the child's
events at earlier frames are given to the page model (``new``, ``started``), and its own as
they happen: the same calls in the same order as one process makes them (connections are
numbered here in that order, so each gets the index it gets in one process); the child's
final connections of a chunk are given (``final``) once its events are. What may differ:
when a connection is given final (the child's at the end of a chunk; and a closed connection is
let go when a look at the closed connections happens, at each process's own new connections and
segments; which connection a segment belongs to does not depend on it, ``qoe.web.tcp._track``),
later than in one process or earlier by a few thousand segments (the pages are the same:
``qoe.web._stream`` gives a page once no connection can change it); and the
``TcpLimits.max_connections`` bound applies to each process's connections, so a capture
that reaches it has others evicted than in one process (with the same warning); and in a
capture whose timestamps go backwards, a page that starts before one given earlier may get
another index (``qoe.web._stream``: its place depends on when connections are final). Warnings of
the reading and the child's exceptions are issued and raised here when the pass reaches the
chunk they came with.

Used by :func:`qoe.web._stream.stream_pages` for a capture file when reading ahead
(``WebOptions(read_ahead=True)``, or None: for a capture of
:data:`qoe.capture.READ_AHEAD_MIN_BYTES` or more on two cores or more, :data:`KEYS_MIN_BYTES`
with a key log). Measured on ``benchmarks/web.py`` and ``benchmarks/web_h2.py``: see there and
docs/guide/web.md. (With a key log it replaced ``qoe.web._ahead``, which decrypted every
connection in the reading process and parsed HTTP here: as fast on HTTP/2 pages, 25 % slower
on HTTPS pages of many HTTP/1.1 connections, where decryption outweighs the rest.)
"""

from __future__ import annotations

import copyreg
import dataclasses
import io
import os
import pickle
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from qoe._records import MAKER_PREFIX, maker_named, record_reducer
from qoe.capture import FLOW_BUCKETS, SegmentChunk, fork_available, read_ahead, read_ahead_pays, tcp_segment_chunks
from qoe.web._dispatch import PARSERS, Parser, ProtocolSink
from qoe.web._sink import ConnectionId
from qoe.web._connresults import TcpView
from qoe.web.tcp import TcpLimits, _track, _warn_hits

NEW, STARTED, DECIDED = range(3)

#: The flow buckets (of :data:`qoe.capture.FLOW_BUCKETS`) whose connections the child takes
#: (it also reads the file; this process makes the pages). Set by measurement on
#: ``benchmarks/web.py``'s 10^4 page loads: at 50 the child was the slower (CPU 4.44-4.50 s
#: against 4.16-4.18 s, wall 4.50-4.58 s), at 47 the two were even (4.27-4.35 and 4.33-4.36 s,
#: wall 4.39-4.43 s); 10^3 page loads: wall 0.48-0.50 s at 47, 0.50-0.52 s at 50. Once the
#: child no longer looked for datagrams in all-TCP chunks (2026-11-28), 47 left this process
#: the slower (CPU 3.97-4.54 s against 3.61-3.90 s, wall 3.84-4.42 s, four runs) and 51 evens
#: them (3.78-4.00 and 3.77-3.88 s, wall 3.85-3.99 s; alternated with 47 on the same file).
CHILD_SHARE = 51

#: The child's share with a key log (decryption is spread too; HTTP/2's header decompression
#: weighs on the connections of this process less than the pages do). Copies of Chromium's
#: pages (``benchmarks/web_h2.py``'s ``write_capture``), 200 each, wall time: HTTP/2
#: (``h2-idle``, 33 MB) 1.37 s at 47, 1.30-1.32 s at 52, 1.29-1.30 s at 57; TLS 1.3 with
#: HTTP/1.1 inside (``tls13-idle``, 18 connections a page) 1.19-1.24 s at 47, 1.20-1.34 s at
#: 50, 1.25-1.42 s at 52, 1.36-1.41 s at 55.
CHILD_SHARE_KEYS = 52

#: Smallest capture split when ``read_ahead`` is None and a key log decrypts it (bytes on
#: disk): the work per byte is larger than without keys, so the split pays on smaller
#: captures than :data:`qoe.capture.READ_AHEAD_MIN_BYTES`. Copies of Chromium's HTTP/2 page,
#: wall time, least of 5, in one process / split: 0.8 MB 0.053 / 0.068 s, 1.7 MB 0.108 / 0.113 s,
#: 3.3 MB 0.227 / 0.162 s, 6.7 MB 0.441 / 0.301 s.
KEYS_MIN_BYTES = 2 << 20

#: Chunks the child reads and works ahead of this process at most (slack for the chunks whose
#: work falls unevenly between the two).
DEPTH = 4

_END = 1 << 62  # the frame of what comes after every segment (the connections final at the end)


def usable(capture: Any, parsers: Any, read_ahead_option: bool | None) -> bool:
    """Whether to split ``capture``'s connections between two processes: a capture file given by
    its path, read ahead (``read_ahead_option``; None: on two cores or more, for a capture of
    :data:`qoe.capture.READ_AHEAD_MIN_BYTES` or more, :data:`KEYS_MIN_BYTES` when ``parsers``
    decrypt with a key log), where a child process can be forked."""
    if not isinstance(capture, (str, os.PathLike)):
        return False
    if read_ahead_option is None:
        wanted = read_ahead_pays(capture) if parsers is PARSERS else read_ahead_pays(capture, KEYS_MIN_BYTES)
    else:
        wanted = read_ahead_option
    return wanted and fork_available()


# -- pickling a final connection with its index to be filled in ------------------------------------


def _cid(local: int) -> ConnectionId:  # pragma: no cover - a name for the pickle; _In gives its own
    raise RuntimeError("a split connection's id is made by qoe.web._split._In")


def _array(dtype: str, shape: tuple[int, ...], data: bytes, writeable: bool) -> np.ndarray:  # pragma: no cover - as _cid
    raise RuntimeError("a split connection's arrays are made by qoe.web._split._In")


def _reduce_cid(obj: ConnectionId) -> tuple[Any, ...]:
    return _cid, (obj.index,)


def _reduce_array(obj: np.ndarray) -> tuple[Any, ...]:
    return _array, (obj.dtype.str, obj.shape, obj.tobytes(), bool(obj.flags.writeable))


def _reduce_default(obj: Any) -> Any:
    return obj.__reduce_ex__(pickle.HIGHEST_PROTOCOL)


class _Reducers(dict):  # type: ignore[type-arg]
    """The child pickler's ``dispatch_table``: a ``ConnectionId`` as a reference to be filled in
    (``_cid``: the child's index), each record (a dataclass) as its fields and its maker's name
    (:func:`qoe._records.record_reducer`), an array as its bytes (``_array``): about a third of
    the time pickle's own ways take (frozen dataclasses with slots, NumPy's reduce). Each
    class's reducer is found when the class is first met."""

    def __missing__(self, cls: type) -> Callable[[Any], Any]:
        if cls is ConnectionId:
            red: Callable[[Any], Any] | None = _reduce_cid
        elif cls is np.ndarray:
            red = _reduce_array
        else:
            red = record_reducer(cls) or copyreg.dispatch_table.get(cls, _reduce_default)
        self[cls] = red
        return red


_REDUCERS = _Reducers()
_AT: dict[str, int] = {}  # maker name -> place of its record's "connection" field (-1: none)


class _In(pickle.Unpickler):
    """This process's unpickler of the child's final connections: a connection's id is the one
    made here when the child's ``NEW`` was given (``ids``: the child's index -> it), and a
    record's ``connection`` field that holds the child's index (transactions, TLS sessions:
    ``ConnectionId.index``) holds the index here."""

    def __init__(self, data: bytes, ids: dict[int, ConnectionId]) -> None:
        super().__init__(io.BytesIO(data))
        self.ids = ids

    def find_class(self, module: str, name: str) -> Any:
        if module == maker_named.__module__ and name.startswith(MAKER_PREFIX):
            make = maker_named(name)
            at = _AT.get(name)
            if at is None:
                names = [f.name for f in dataclasses.fields(make.record)]  # type: ignore[attr-defined]
                at = _AT[name] = names.index("connection") if "connection" in names else -1
            if at < 0:
                return make
            ids = self.ids

            def remade(*values: Any) -> Any:
                if type(values[at]) is int:
                    values = values[:at] + (ids[values[at]].index,) + values[at + 1 :]
                return make(*values)

            return remade
        if module == __name__:
            if name == "_cid":
                return self.ids.__getitem__
            if name == "_array":
                return _from_bytes
        return super().find_class(module, name)


def _from_bytes(dtype: str, shape: tuple[int, ...], data: bytes, writeable: bool) -> np.ndarray:
    a = np.frombuffer(data, dtype=dtype).reshape(shape)
    return a.copy() if writeable else a


def _dumps(obj: Any) -> bytes:
    out = io.BytesIO()
    p = pickle.Pickler(out, pickle.HIGHEST_PROTOCOL)
    p.dispatch_table = _REDUCERS
    p.dump(obj)
    return out.getvalue()


# -- the child ---------------------------------------------------------------------------------


class _Log:
    """The child's side: the sink factory of its reassembly and the record of its events."""

    def __init__(self, parsers: Sequence[Parser]) -> None:
        self.parsers = parsers
        self.events: list[tuple[Any, ...]] = []
        self.at = -1  # frame index of the segment being worked on
        self.sinks: dict[int, ProtocolSink] = {}
        self.finals: list[tuple[int, TcpView, Any]] = []

    def sink_for(self, cid: ConnectionId) -> ProtocolSink:
        self.events.append((self.at, NEW, cid.index, cid.client, cid.server, cid.first_ts_ns, cid.initiator_known))
        sink = self.sinks[cid.index] = ProtocolSink(cid, on_started=self._started, on_decided=self._decided,
                                                    parsers=self.parsers)
        return sink

    def _started(self, sink: ProtocolSink, ts: int) -> None:
        self.events.append((self.at, STARTED, sink.conn.index, ts))

    def _decided(self, sink: ProtocolSink) -> None:
        self.events.append((self.at, DECIDED, sink.conn.index, sink.protocol))

    def final(self, conn: TcpView) -> None:
        i = conn.id.index
        sink = self.sinks.pop(i, None)
        self.finals.append((i, conn, sink.result() if sink is not None else None))

    def take(self) -> tuple[list[tuple[Any, ...]], bytes | None]:
        """The events since the last call, and the final connections pickled in one go."""
        events, self.events = self.events, []
        finals, self.finals = self.finals, []
        return events, _dumps(finals) if finals else None


def _child(path: Any, limits: TcpLimits, share: int, name: str, with_udp: bool, parsers: Sequence[Parser]
           ) -> Iterator[tuple[SegmentChunk | None, list[tuple[Any, ...]], bytes | None, dict[str, int] | None]]:
    """The child's batches: per chunk of the file, the chunk as read (for the other process's
    rows), the child's events up to its end and its connections final by then (pickled);
    last, those final at the end, with the limits crossed (``{kind: connections}``)."""
    log = _Log(parsers)
    hits: dict[str, int] = {}
    read: list[SegmentChunk | None] = [None]

    def rows() -> Iterator[tuple[Any, ...] | None]:
        for chunk in tcp_segment_chunks(path, udp=with_udp):
            read[0] = chunk
            for r in chunk.rows(flows=(0, share)):
                log.at = r[0]
                yield r
            log.at = chunk.upto
            yield None  # (given back by _track once every segment before it is done)
        log.at = _END

    for conn in _track(rows(), log.sink_for, limits, name, hits=hits, view=True):
        if conn is None:
            yield read[0], *log.take(), None
        else:
            log.final(conn)
    yield None, *log.take(), hits


# -- here --------------------------------------------------------------------------------------


class _Remote:
    """A connection of the child's here: its id, its protocol as the child decided it, and its
    sink's result once final (what ``qoe.web._stream`` reads of a ``ProtocolSink``)."""

    __slots__ = ("conn", "protocol", "value")

    def __init__(self, conn: ConnectionId) -> None:
        self.conn = conn
        self.protocol: str | None = None
        self.value: Any = None

    def result(self) -> Any:
        return self.value


class _Merge:
    """The child's events, given in order of frame among this process's own."""

    def __init__(self, batches: Iterable[Any], new: Callable[[ConnectionId, Any], Any],
                 started: Callable[[Any, int], None], final: Callable[[TcpView], None],
                 parsers: Sequence[Parser]) -> None:
        self.batches = batches
        self.new, self.started, self.final = new, started, final
        self.events: deque[tuple[Any, ...]] = deque()
        self.count = 0  # connections numbered so far (both processes')
        self.remotes: dict[int, _Remote] = {}  # the child's index -> the connection here
        self.hits: dict[str, int] = {}
        self.parsers = parsers

    def number(self) -> int:
        """The index of a new connection of this process's (every event before it given)."""
        return self.count

    def sink_for(self, cid: ConnectionId) -> ProtocolSink:
        sink = ProtocolSink(cid, on_started=self.started, parsers=self.parsers)
        self.count += 1
        self.new(cid, sink)
        return sink

    def rows(self, share: int, udp: Callable[[Any], None] | None) -> Iterator[tuple[Any, ...]]:
        """This process's segments (of the chunks the child read), the child's events before
        each given first."""
        events = self.events
        finals = None
        for chunk, got, blob, hits in self.batches:
            if finals is not None:
                # the child's connections final by the end of the chunk before, given once
                # every event of that chunk's is (a connection may be given final later than
                # it was: qoe.web._stream gives a page only once no connection can change it)
                self._give(_END)
                self._finals(finals)
            events.extend(got)  # (the child's events up to the chunk's end)
            finals = blob
            if chunk is None:  # the end: the connections the child had left
                self.hits = hits or {}
                self._give(_END + 1)  # (at the end, a connection's first bytes may come with its flush)
                if finals is not None:
                    self._finals(finals)
                return
            for r in chunk.rows(udp=udp, flows=(share, FLOW_BUCKETS)):
                f = r[0]
                if events and events[0][0] < f:
                    self._give(f)
                yield r
        raise RuntimeError("the connections' child process ended without its last batch")

    def _finals(self, blob: bytes) -> None:
        remotes = self.remotes
        ids = {i: r.conn for i, r in remotes.items()}
        for i, conn, value in _In(blob, ids).load():
            r = remotes.pop(i)
            r.value = value
            self.final(conn)

    def _give(self, before: int) -> None:
        events = self.events
        remotes = self.remotes
        while events and events[0][0] < before:
            e = events.popleft()
            kind = e[1]
            if kind == STARTED:
                self.started(remotes[e[2]], e[3])
            elif kind == NEW:
                cid = ConnectionId(client=e[3], server=e[4], index=self.count, first_ts_ns=e[5], initiator_known=e[6])
                self.count += 1
                r = remotes[e[2]] = _Remote(cid)
                self.new(cid, r)
            else:  # DECIDED
                remotes[e[2]].protocol = e[3]


def connections(
    path: Any, limits: TcpLimits, *, new: Callable[[ConnectionId, Any], Any], started: Callable[[Any, int], None],
    final: Callable[[TcpView], None], udp: Callable[[Any], None] | None, parsers: Sequence[Parser] = PARSERS,
    share: int | None = None,
) -> Iterator[None]:
    """Reassemble the TCP connections of the capture at ``path`` in two processes, making the
    calls one process makes: ``new(cid, sink)`` with each new connection and the sink that
    stands for its ``ProtocolSink`` (``conn``, ``protocol``, ``result()``); ``started(sink,
    ts)`` as the ``ProtocolSink``'s ``on_started``; ``final(conn)`` with each final
    connection; ``udp`` with each chunk's UDP datagrams; ``parsers``: the connections'
    protocols (``qoe.web._dispatch.parsers(keylog)``: TLS decrypted with a key log); ``share``:
    the child's flow buckets (default :data:`CHILD_SHARE`, :data:`CHILD_SHARE_KEYS` with a key
    log). Gives None after each final connection of this process's (the caller may give the
    pages made meanwhile)."""
    name = os.fspath(path)
    if share is None:
        share = CHILD_SHARE if parsers is PARSERS else CHILD_SHARE_KEYS
    batches = read_ahead(_child(path, limits, share, name, udp is not None, parsers), DEPTH, process=True)
    if parsers is not PARSERS:
        # with a key log, the TLS parsers (cryptography, hpack: 25-30 ms) load here while the child
        # reads its first chunk, not after this process has waited for it
        import qoe.web._decrypted  # noqa: F401, PLC0415
    merge = _Merge(batches, new, started, final, parsers)
    hits: dict[str, int] = {}
    try:
        for conn in _track(merge.rows(share, udp), merge.sink_for, limits, name, number=merge.number, hits=hits,
                           view=True):
            final(conn)  # type: ignore[arg-type] - no None among this process's rows
            yield None
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()
    for kind, n in merge.hits.items():
        hits[kind] = hits.get(kind, 0) + n
    _warn_hits(hits, limits, name, stacklevel=3)
