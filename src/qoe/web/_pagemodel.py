"""The page model: a page load's items, their grouping into pages, PLT and the seed paper's diagnosis.

The rules are those of :mod:`qoe.web.pages` (its module notes); this module holds them once
for the two paths that apply them: :func:`build_pages` (everything in hand) and
``qoe.web._stream`` (one streaming pass over a capture), which groups items itself in the
same order and scores each page with :func:`_page`.

References
----------
.. [1] Pujol et al., "A QoE Perspective on Sizing Network Buffers", IMC 2014, §9.1.
.. [2] ITU-T G.1030 (11/2005), Annex A (PLT → MOS; Appendix II in the 02/2014 edition).
.. [3] RFC 6928, "Increasing TCP's Initial Window", §2 (IW = min(10 MSS, max(2 MSS, 14600))).
"""

from __future__ import annotations

import functools
import math
import warnings
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from qoe.errors import InputError
from qoe.options import OptionsBase
from qoe.report import as_dict, brief
from qoe.web import g1030
from qoe.web.g1030 import PRESETS
from qoe.web._dns import DnsQuery
from qoe._records import builder
from qoe.web.tls import TlsSession

__all__ = ["Page", "WebOptions", "build_pages", "onload_end_ns", "txn_protocol", "DEFAULT_IDLE_GAP_S"]

#: An item starting more than this after the last byte of everything before it starts a page.
DEFAULT_IDLE_GAP_S = 2.0
# RFC 6928 §2: the initial window is 10 segments (for MSS <= 1460).
_IW_SEGMENTS = 10
# RFC 9293 §3.7.1: the default send MSS without the option is 536 bytes.
_DEFAULT_MSS = 536
_NS = 1e9
#: How long a connection's pending handshake counts as activity of the page (its items are active
#: from its SYN): three SYN retransmissions, RFC 6298's initial RTO of 1 s (§2.1, §2.4: at least
#: 1 s) doubled at each (§5.5): 1 + 2 + 4 s, plus a second for the answer. A page whose next
#: connection's SYNs wait longer than that in a full buffer is split.
PENDING_HANDSHAKE_NS = 8_000_000_000
_TLS13 = 0x0304


@dataclass(frozen=True)
class WebOptions(OptionsBase):
    """How :func:`qoe.score` groups and scores page loads (see :func:`build_pages`).

    Attributes
    ----------
    idle_gap_s : float
        Quiet time that ends a page (default 2 s).
    preset : {"access", "backbone"}
        G.1030 bounds of the seed paper §9.1.
    t_min, t_max : float, optional
        Custom G.1030 bounds (load time scored 5 and 1, s); both or neither.
    share : float
        The share of the PLT that makes it RTT- or loss-dominated (default 0.5).
    base_rtt_s : float, optional
        The path's RTT without queueing (the testbed's configured delay, a ping on the idle
        path), the baseline of the diagnosis; default: the lowest RTT on the page's
        connections, which holds any queue that stood before the page began.
    keylog : str or tuple of str, optional
        NSS key log file(s) (``SSLKEYLOGFILE``) to decrypt TLS and QUIC with
        (:mod:`qoe.web.decrypt`, :mod:`qoe.web.quic`); a pcapng capture's Decryption Secrets
        Blocks are used as well. Without, HTTPS objects are not visible.
    read_ahead : bool or None
        Use a second core (on Linux): a capture file is read in a child process, and its
        TCP connections are reassembled (decrypted, with a key log) and parsed half there,
        half here, the pages made here (``qoe.web._split``); QUIC connections are read half
        here, half in a child
        (:func:`qoe.web.quic.quic_connections`). Less wall time with a core to spare, more
        CPU time, the same pages. Where no child process can be forked, or for a file
        object, the segments are read in a second thread. None: when the process may run on
        two cores or more and the capture holds 8 MiB or more
        (:func:`qoe.capture.read_ahead_pays`), 2 MiB with a key log or for QUIC, as ``qoe
        web pages`` and ``qoe score`` do.
        Default False (a pool of runs, :mod:`qoe.batch`, keeps every core busy already).
        How the work is done, not what is computed: not in a report's options
        (:meth:`to_dict`).
    """

    idle_gap_s: float = DEFAULT_IDLE_GAP_S
    preset: str = "access"
    t_min: float | None = None
    t_max: float | None = None
    share: float = 0.5
    base_rtt_s: float | None = None
    keylog: str | tuple[str, ...] | None = None
    read_ahead: bool | None = field(default=False, metadata={"in_report": False})  # how, not what: not in reports

    KIND: ClassVar[str] = "web"

    def __post_init__(self) -> None:
        if not (isinstance(self.idle_gap_s, (int, float)) and self.idle_gap_s > 0 and math.isfinite(self.idle_gap_s)):
            raise InputError(f"idle_gap_s must be a positive number of seconds; given {self.idle_gap_s!r}")
        if self.preset not in PRESETS:
            raise InputError(f"preset must be one of {', '.join(PRESETS)}; given {self.preset!r}")
        if (self.t_min is None) != (self.t_max is None):
            raise InputError("t_min and t_max go together (the load times scored 5 and 1)")
        if not 0 < self.share <= 1:
            raise InputError(f"share must be in (0, 1]; given {self.share!r}")
        if self.base_rtt_s is not None and not (isinstance(self.base_rtt_s, (int, float))
                                                and 0 <= self.base_rtt_s < math.inf):
            raise InputError(f"base_rtt_s must be a number of seconds >= 0; given {self.base_rtt_s!r}")
        self._check_keylog()
        if self.read_ahead is not None and not isinstance(self.read_ahead, bool):
            raise InputError(f"read_ahead must be True, False or None (when there are two cores); "
                             f"given {self.read_ahead!r}")

    @property
    def bounds(self) -> tuple[float, float] | None:
        """(t_min, t_max) when custom bounds are set. Deprecated: read ``t_min`` and ``t_max``."""
        warnings.warn("WebOptions.bounds is deprecated; read WebOptions.t_min and WebOptions.t_max",
                      DeprecationWarning, stacklevel=2)
        return _custom_bounds(self)


def _custom_bounds(options: WebOptions) -> tuple[float, float] | None:
    """(t_min, t_max) of ``options`` when custom G.1030 bounds are set."""
    return None if options.t_min is None else (float(options.t_min), float(options.t_max))  # type: ignore[arg-type]


#: The per-field keywords the page functions took before ``options=`` (one release, deprecated).
_LEGACY = ("idle_gap_s", "preset", "bounds", "share")


def _resolve(func: str, options: WebOptions | None, legacy: dict[str, Any],
             allowed: tuple[str, ...] = _LEGACY) -> WebOptions:
    """The options of a call: ``options``, or the deprecated keywords (with a warning); both is an error.

    ``bounds=(best, worst)`` becomes ``t_min``/``t_max`` (one name for the G.1030 bounds:
    the option fields and the CLI flags, as :func:`qoe.web.g1030.mos` calls them).
    """
    unknown = sorted(set(legacy) - set(allowed))
    if unknown:
        raise TypeError(f"{func}() got an unexpected keyword argument {unknown[0]!r}")
    if options is not None and not isinstance(options, WebOptions):
        raise InputError(f"{func}: options must be a qoe.web.WebOptions; given {type(options).__name__}")
    if not legacy:
        return options if options is not None else WebOptions()
    names = ", ".join(f"{k}=" for k in legacy)
    if options is not None:
        raise InputError(f"{func}: both options= and {names} given (ambiguous); put every option in WebOptions")
    fields = dict(legacy)
    bounds = fields.pop("bounds", None)
    new = [k for k in fields]
    if bounds is not None:
        bounds = tuple(bounds)
        if len(bounds) != 2:
            raise InputError(f"bounds must be (t_min, t_max); given {bounds!r}")
        fields["t_min"], fields["t_max"] = bounds
        new += ["t_min", "t_max"]
    warnings.warn(f"{func}({names}...) is deprecated; pass options=WebOptions({', '.join(k + '=' for k in new)}...)",
                  DeprecationWarning, stacklevel=3)
    return WebOptions(**fields)


@dataclass(frozen=True)
class Page:
    """One page load of one client.

    Attributes
    ----------
    client : str
        The client's IP address.
    index : int
        0-based number of the page among the capture's pages, in start order.
    url : str or None
        The main document (its first transaction's URL; ``https://<server name>/`` for TLS).
    host : str or None
    scheme : {"http", "https"}
        That of the main document (``https`` for a TLS or QUIC page, decrypted or not).
    protocol : str
        What carried its objects, as far as the capture shows: the HTTP version as ALPN names
        it (``http/1.0``, ``http/1.1``, ``h2``, ``h3``) after what protected it, decrypted
        (``TLS 1.2 http/1.1``, ``TLS 1.3 h2``, ``QUIC h3``: :func:`txn_protocol`); for TLS
        without keys its version and ALPN (TLS <= 1.2: the server's choice; TLS 1.3: the
        client's offer, the choice being encrypted); several joined by ``"; "``. Connections
        that carried no object (opened and never used, decrypted and not HTTP) are named only
        on a page of nothing else.
    start_ns, end_ns : int
        First event and last byte (ns since the Unix epoch).
    start_event : {"dns", "syn", "request", "client-hello"}
        What the page's first event was.
    plt_s : float
        Page load time, fully loaded (``end - start``).
    onload_s : float or NaN
        Page load time to the estimated load event (``start`` → the last byte of the objects
        that delay the browser's load event; :func:`onload_end_ns` says which): NaN when the
        page's objects are not visible (encrypted without keys).
    ttfb_s : float or NaN
        Start → first byte of the main document's response. Without keys, over TLS, the
        server's first application_data record (with TLS 1.3 it may be a session ticket or
        HTTP/2's SETTINGS, sent before the response: 0.1-25 ms early on data/web/browser's
        loads); without keys over QUIC, NaN.
    objects : int
        The objects the page shows: its transactions, plus one per connection whose objects
        are not visible (encrypted without keys: a lower bound). A connection opened and never
        used (a preconnect) or decrypted and not HTTP holds none.
    connections, new_connections : int
        Connections the page used; those it opened.
    bytes : int
        Response bytes on the wire (HTTP: heads and bodies; HTTPS: the servers' TLS bytes).
    rtt_s, rtt_min_s : float or NaN
        Median and minimum RTT of the page's connections (:mod:`qoe.web.tcp`).
    rtt_baseline_s : float or NaN
        The RTT taken as the path's without queueing, for the diagnosis.
    rtt_baseline : {"page minimum", "given"}
        Where it comes from: ``rtt_min_s`` (which holds any queue that stood before the page
        began: under a standing queue the page's queueing is underestimated), or
        ``WebOptions.base_rtt_s``.
    round_trips : int
        Round trips the page needs without loss, counted on its critical path (see the
        module notes).
    rtt_component_s : float
        ``round_trips × rtt_s``, at most the time the critical path did not spend waiting
        for retransmissions (a note says when it was capped).
    retransmissions : int
        Retransmitted segments on the page's connections.
    loss_wait_s : float
        Time the page's critical path (the chain of objects that ended last) lost waiting
        for retransmissions and in stalls: at most ``plt_s``.
    diagnosis : {"rtt-dominated", "loss-dominated", "neither"}
    rtt_share, loss_share : float
        ``rtt_component_s / plt_s``; ``loss_wait_s`` over the PLT's increase above
        ``round_trips × rtt_baseline_s`` (at least the wait): both in [0, 1] (NaN when unknown).
    mos : float
        ITU-T G.1030 Annex A MOS of ``plt_s`` (:func:`qoe.web.g1030.mos`).
    preset : str
        The G.1030 bounds used (``access``, ``backbone`` or ``custom``).
    complete : bool
        Every transaction seen whole (no gap, no error, not cut by the capture's end).
    statuses : tuple of int
        The HTTP status codes of the page's responses, in order.
    notes : tuple of str
    transactions : tuple
        The page's :class:`qoe.web.http.Transaction` records (for HAR export).
    """

    client: str
    index: int
    url: str | None
    host: str | None
    scheme: str
    protocol: str
    start_ns: int
    end_ns: int
    start_event: str
    plt_s: float
    onload_s: float
    ttfb_s: float
    objects: int
    connections: int
    new_connections: int
    bytes: int
    rtt_s: float
    rtt_min_s: float
    rtt_baseline_s: float
    rtt_baseline: str
    round_trips: int
    rtt_component_s: float
    retransmissions: int
    loss_wait_s: float
    diagnosis: str
    rtt_share: float
    loss_share: float
    mos: float
    preset: str
    complete: bool
    statuses: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    transactions: tuple[Any, ...] = field(default=(), repr=False)

    kind: ClassVar[str] = "web"
    #: The headline columns of :meth:`to_record` with ``brief=True``.
    BRIEF_COLUMNS: ClassVar[tuple[str, ...]] = (
        "client", "url", "protocol", "plt_s", "objects", "connections", "rtt_s", "round_trips", "retransmissions",
        "loss_wait_s", "diagnosis", "mos",
    )

    @property
    def label(self) -> str:
        """A short name of the page for notes: its URL, else its host, else its client."""
        return f"page {self.index} ({self.url or self.host or 'client ' + self.client})"

    def identity(self) -> dict[str, Any]:
        """The columns that name this page in detail tables."""
        return {"page": self.index, "client": self.client, "page_url": self.url}

    def to_record(self, *, brief: bool = False) -> dict[str, Any]:
        """One flat record (the page's row); ``brief``: the headline columns."""
        rec = as_dict(self, skip=("transactions", "notes"))
        rec["statuses"] = " ".join(map(str, self.statuses))
        rec["notes"] = "; ".join(self.notes)
        return _brief(rec, self.BRIEF_COLUMNS) if brief else rec

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain Python, the transactions included."""
        return as_dict(self)

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """Detail tables: ``objects`` (one row per transaction of the page)."""
        return {"objects": [_object_row(t) for t in self.transactions]}


_brief = brief


def _object_row(t: Any) -> dict[str, Any]:
    def s(ns: int | None) -> float:
        return math.nan if ns is None else ns / _NS
    return {
        "connection": t.connection, "protocol": t.protocol, "method": t.method, "url": t.url, "status": t.status,
        "request_start_s": s(t.request_start_ns), "response_start_s": s(t.response_start_ns),
        "response_end_s": s(t.response_end_ns), "ttfb_s": s(t.ttfb_ns), "content_type": t.content_type,
        "body_bytes": t.response_body_bytes, "reused": t.reused, "complete": t.complete,
    }


# --------------------------------------------------------------------------------------
# Items: what pages are made of

@dataclass(slots=True)
class _Item:
    client: str
    start_ns: int  # first request byte, or the ClientHello (TLS)
    end_ns: int  # last byte
    conn: int
    txn: Any = None  # an HTTP Transaction
    tls: Any = None  # a TLS session
    server_name: str | None = None
    tcp: Any = None  # what the streaming path keeps of its TCP connection (qoe.web._connresults.TcpView)
    active_ns: int = 0  # when its activity began: its connection's first packet (SYN) if it opened it
    preconnect: bool = False  # a TLS connection that carried no request (opened ahead, unused)
    silent_client: bool = False  # ... told without keys (or, records cut, by TCP): its client sent no request
    held_ns: float = -1  # until when its connection was held open, where no TCP connection says it (QUIC)
    opaque: str | None = None  # decrypted, not HTTP: why (its bytes and timing count, it holds no object)

    @property
    def protocol(self) -> str:
        """What carried it: the HTTP version as ALPN names it (after what protected it:
        ``TLS 1.3 h2``, ``QUIC h3``), or what TLS shows in clear."""
        if self.txn is not None:
            return txn_protocol(self.txn)
        s = self.tls
        name = s.version_name or "TLS"
        if s.alpn:  # TLS <= 1.2: the ServerHello's choice (RFC 7301 §3.1)
            return f"{name} {s.alpn}"
        if s.alpn_offered:  # TLS 1.3: the choice is encrypted (EncryptedExtensions, RFC 8446 §4.3.1)
            return f"{name} (ALPN offered: {','.join(s.alpn_offered)})"
        return name


def txn_protocol(t: Any) -> str:
    """What carried transaction ``t``, as a page names it: its HTTP version as ALPN names it,
    after what protected it when anything did (``"TLS 1.2 http/1.1"``, ``"TLS 1.3 h2"``,
    ``"QUIC h3"``: the form of a TLS 1.2 connection without keys, whose ALPN is in clear)."""
    name = t.protocol or "http"
    return f"{t.security} {name}" if t.security else name


def _http_items(transactions: Iterable[Any]) -> list[_Item]:
    out = []
    for t in transactions:
        start = t.request_start_ns if t.request_start_ns is not None else t.started_ns
        end = t.response_end_ns or t.response_start_ns or t.request_end_ns or start
        if start is None:
            continue
        opened = (not t.reused and t.connection_start_ns is not None
                  and 0 < start - t.connection_start_ns <= PENDING_HANDSHAKE_NS)
        out.append(_Item(client=t.client[0] if t.client else "", start_ns=start, end_ns=max(end, start), conn=t.connection, txn=t,
                         server_name=t.host, active_ns=t.connection_start_ns if opened else start))
    return out


def _tls_items(sessions: Iterable[Any], conns: Mapping[int, Any]) -> list[_Item]:
    out = []
    for s in sessions:
        start = s.client_hello_ns if s.client_hello_ns is not None else s.connection_start_ns
        # its objects' last byte: the server's last byte delivered in order, as a transaction's
        # response end is (a retransmission of bytes the client had is not one: on h2-loss,
        # 247 ms after the page's last response; at a server-side capture the client may get
        # the last byte later, from a retransmission: what the capture point cannot tell)
        end = s.server_last_byte_ns or s.client_last_byte_ns
        c = conns.get(s.connection)
        # the capture's snapshot length cut its packets: the records stopped being read at the
        # first one cut, but the TCP headers say when each side last sent data
        snapped = snapshot_cut(c)
        if (end is None or snapped) and c is not None:
            end = c.server.last_data_ts_ns or c.client.last_data_ts_ns or end
        end = end or s.server_first_app_data_ns or s.handshake_end_ns or start
        # HTTP's client speaks first (a request, or HTTP/2's preface, RFC 9113 §3.4): a whole
        # handshake after which the client sent no application_data record (TLS 1.3: none after
        # the one taken as its Finished, qoe.web.tls) carried no request. It was opened ahead (a
        # preconnect, a backup socket), as a key log would show; what its server sent after the
        # handshake (TLS 1.3 session tickets, RFC 8446 §4.6.1) is no object of the page. (TLS
        # records over TCP only: a QUIC connection in this model, pages._QuicAsTls, is not one.)
        silent = bool(isinstance(s, TlsSession) and s.complete and s.handshake_end_ns is not None
                      and s.client_first_app_data_ns is None and not snapped)
        if silent:
            end = min(end, s.handshake_end_ns)
        # a handshake the client gave up (its FIN before the handshake was whole: Chromium's
        # duplicate sockets once HTTP/2 coalesced the origin, a backup whose answer came late)
        # carried no request either; the server's bytes after the client's FIN are no object
        elif (isinstance(s, TlsSession) and not s.complete and s.client_hello_ns is not None and c is not None
              and c.client.fin_ts_ns is not None and s.client_first_app_data_ns is None and not snapped):
            silent = True
            end = min(end, max(c.client.fin_ts_ns, start))
        # the same, told by the TCP headers where the snapshot length cut the records: the client
        # closed the connection without sending a byte after the server's first (no Finished, no
        # request; a handshake whole but unused sends its Finished, which no header tells from a
        # request: counted as used)
        elif isinstance(s, TlsSession) and snapped and c.client.fin_ts_ns is not None and _unanswered(c):
            silent = True
            end = min(end, max(c.client.fin_ts_ns, start))
        out.append(_Item(client=s.client[0], start_ns=start, end_ns=max(end, start), conn=s.connection, tls=s,
                         server_name=s.server_name,
                         active_ns=s.connection_start_ns if 0 < start - s.connection_start_ns <= PENDING_HANDSHAKE_NS
                         else start, preconnect=silent or getattr(s, "unused", False), silent_client=silent,
                         held_ns=getattr(s, "held_until_ns", -1), opaque=getattr(s, "opaque", None)))
    return out


def snapshot_cut(conn: Any) -> bool:
    """The capture's snapshot length cut payload bytes of connection ``conn`` (its TCP view, or
    a QUIC connection's; None: no facts, False)."""
    return conn is not None and bool(conn.client.truncated_bytes or conn.server.truncated_bytes)


def _unanswered(conn: Any) -> bool:
    """The client of TCP connection ``conn`` sent no payload after the server's first (none at
    all when the server sent none)."""
    last, first = conn.client.last_data_ts_ns, conn.server.first_data_ts_ns
    return last is None or first is None or last <= first


def opened_syn_ns(it: _Item, conn: Any) -> int | None:
    """The SYN of the connection ``it`` opened for its page, else None.

    A page opened a connection when the item is its TLS session or its first transaction
    (not ``reused``), and the item is active from its SYN (``it.active_ns``, within
    ``PENDING_HANDSHAKE_NS`` before its start: the rule that groups it). Such a connection
    belongs to the page from its SYN on, whether the page's first item is on it or not: a
    preconnect's SYN, or (decrypted) the document's connection whose request came after a
    later connection's ClientHello.
    """
    if conn is None or conn.syn_ts_ns is None:
        return None
    if it.tls is None and (it.txn is None or it.txn.reused):
        return None
    syn = int(conn.syn_ts_ns)
    return syn if it.active_ns <= syn <= it.start_ns else None


def held_until_ns(conn: Any) -> float:
    """Until when the client held a page's TCP connection open: its first FIN or RST, either way.

    A connection that never closed is held to the end of the capture (``math.inf``); one whose
    tracking ended otherwise (evicted, its 4-tuple reused) until its last packet. Without TCP
    facts (``conn`` None), -1: not known to be held.
    """
    if conn is None:
        return -1
    closes = [t for t in (conn.fin_ts_ns, conn.rst_ts_ns) if t is not None]
    if closes:
        return min(closes)
    return math.inf if conn.closed == "end-of-capture" else conn.last_ts_ns


def starts_other_page(it: _Item, first: _Item, active: int, busy_until: int, held_until: float) -> bool:
    """Does a TLS connection that would join the client's last page by the idle gap start a page?

    Only when it goes to another server name than the page's first item, begins after every
    item before it ended (the page is not loading), and the page's connections are all closed
    by then (``held_until``, :func:`held_until_ns`): a browser keeps its sockets open past the
    load, and a script's late fetch to another origin (or a preconnect) opens its connection
    while they are; a client that let go of its page (curl, wget exiting) closed them first.
    """
    return (it.tls is not None and not it.preconnect and it.server_name != first.server_name
            and active > busy_until and active >= held_until)


def _group(items: list[_Item], idle_gap_ns: int, conns: Mapping[int, Any] | None = None) -> list[list[_Item]]:
    """Pages of one client's items (sorted by start), by Referer, idle gap and server name.

    ``conns`` (connection index -> qoe.web.tcp.Connection, or its TcpView) says until when
    each page's connections were held open (:func:`starts_other_page`).
    """
    conns = conns or {}
    pages: list[list[_Item]] = []
    ends: list[int] = []  # per page: its last byte
    held: list[float] = []  # per page: until when one of its connections was held open
    docs: dict[str, int] = {}  # URL of a document -> its page
    busy_until = -1
    for it in items:
        ref = it.txn.referer if it.txn is not None else None
        # a pending handshake is activity: an item whose connection it opened is active from
        # its SYN (SYNs retransmitted for seconds in a full uplink buffer are still the page)
        active = it.active_ns
        if ref is not None and ref in docs and active <= ends[docs[ref]] + idle_gap_ns:
            k = docs[ref]
        elif pages and active <= busy_until + idle_gap_ns and not starts_other_page(
                it, pages[-1][0], active, busy_until, held[-1]):
            k = len(pages) - 1
        else:
            pages.append([])
            ends.append(-1)
            held.append(-1)
            k = len(pages) - 1
        pages[k].append(it)
        ends[k] = max(ends[k], it.end_ns)
        held[k] = max(held[k], held_until_ns(it.tcp if it.tcp is not None else conns.get(it.conn)), it.held_ns)
        busy_until = max(busy_until, it.end_ns)
        ctype = (it.txn.content_type or "") if it.txn is not None else ""
        if it.txn is not None and it.txn.url and ctype.startswith(("text/html", "application/xhtml")):
            docs[it.txn.url] = k
    return pages


# --------------------------------------------------------------------------------------
# Round trips

def _response_bytes(t: Any) -> int:
    """A transaction's response bytes on the wire: head and body (chunk framing included)."""
    return (t.response_header_bytes or 0) + (t.response_body_wire_bytes or 0)


def _mos(plt: float, preset: str, bounds: tuple[float, float] | None) -> float:
    """G.1030 MOS of one PLT with a preset or custom (t_min, t_max) bounds.

    The same double as ``float(g1030.mos(plt, ...))`` (G.1030 (11/2005) Annex A): the same
    NumPy ``log``, the same operations in the same order, the clip to [1, 5] as ``min``/``max``;
    without the array checks and ``errstate`` around one number (30 µs of a page's 230 on
    ``benchmarks/web.py --short``). A PLT that is not positive (0 scores 5, a negative or NaN
    one is an error) goes to ``g1030.mos`` itself.
    """
    lo, hi = _g1030_bounds(preset, bounds)
    if plt > 0:
        best, worst = g1030._MOS_BEST, g1030._MOS_WORST
        score = best - (best - worst) * float(np.log(plt / lo)) / float(np.log(hi / lo))
        return min(max(score, worst), best)
    if bounds is None:
        return float(g1030.mos(plt, preset=preset))
    return float(g1030.mos(plt, preset=None, t_min=bounds[0], t_max=bounds[1]))


@functools.lru_cache(maxsize=64)
def _g1030_bounds(preset: str, bounds: tuple[float, float] | None) -> tuple[float, float]:
    """``g1030.bounds`` of a preset or custom bounds (checked there: an InputError is not cached)."""
    if bounds is None:
        return g1030.bounds(preset)
    return g1030.bounds(None, t_min=bounds[0], t_max=bounds[1])


def _slow_start_rounds(nbytes: int, mss: int) -> int:
    """Extra rounds slow start needs beyond the first for ``nbytes`` (IW of RFC 6928 §2)."""
    if nbytes <= 0:
        return 0
    segments = math.ceil(nbytes / mss)
    return max(0, math.ceil(math.log2(segments / _IW_SEGMENTS + 1)) - 1)


def _serial_chain(items: list[_Item]) -> list[_Item]:
    """The longest chain of items each starting after the previous ended (by count, then time)."""
    order = sorted(items, key=lambda i: i.end_ns)
    best: list[tuple[int, int]] = []  # per item: (chain length, index of predecessor)
    for k, it in enumerate(order):
        cand = [(best[j][0] + 1, j) for j in range(k) if order[j].end_ns <= it.start_ns]
        best.append(max(cand) if cand else (1, -1))
    if not best:
        return []
    k = max(range(len(order)), key=lambda j: best[j][0])
    chain = []
    while k >= 0:
        chain.append(order[k])
        k = best[k][1]
    return chain[::-1]


def _round_trips(items: list[_Item], conns: Mapping[int, Any], opened: set[int]) -> int:
    rounds = 0
    counted: set[int] = set()
    for it in _serial_chain(items):
        c = conns.get(it.conn)
        if it.conn in opened and it.conn not in counted:
            rounds += 1  # SYN, SYN/ACK
            counted.add(it.conn)
        mss = (c.server.mss or c.client.mss or _DEFAULT_MSS) if c is not None else _DEFAULT_MSS
        if it.tls is not None:
            rounds += 1 if (it.tls.version or 0) >= _TLS13 else 2  # RFC 8446 §2 / RFC 5246 §7.3
            rounds += 1 + _slow_start_rounds(it.tls.server_bytes, mss)
        else:
            t = it.txn
            body = _response_bytes(t)
            rounds += 1 + _slow_start_rounds(body, mss)
    return rounds


# --------------------------------------------------------------------------------------
# Pages

def _rtt_of(conn_list: list[Any]) -> tuple[float, float]:
    """(median, minimum) path RTT of the page's connections, s.

    A data/ACK sample measures only the leg from the capture point to the receiver of that
    direction's data; the path RTT is the sum of both legs: the handshake's (SYN → SYN/ACK →
    ACK) and, on connections with samples both ways, the sum of the two directions' medians
    (minima). At a client-side capture the server direction's leg is short, the client's the
    whole path.
    """
    paths, floors = [], []
    for c in conn_list:
        h = c.handshake_rtt_ns
        if h is not None:
            paths.append(h)
            floors.append(h)
        if c.client.rtt.count and c.server.rtt.count:
            paths.append(c.client.rtt.median_ns + c.server.rtt.median_ns)
            floors.append(c.client.rtt.min_ns + c.server.rtt.min_ns)
    if not paths:
        return math.nan, math.nan
    o = sorted(paths)  # the median of a few values (as numpy's: the mean of the middle two)
    n = len(o)
    return (o[(n - 1) // 2] + o[n // 2]) / 2 / _NS, float(min(floors)) / _NS


def _diagnose(plt: float, rounds: int, rtt: float, baseline: float, wait: float,
              share: float) -> tuple[str, float, float, float]:
    """The seed paper's label (§9.1), the RTT component and the two shares it rests on.

    ``wait`` is the critical path's (at most the PLT). The RTT component ``rounds × rtt`` is
    capped at the time the path did not spend waiting (``plt − wait``): round trips counted
    on the path cannot take longer than the path. ``rtt_share`` is its share of the PLT;
    ``loss_share`` the wait's share of the PLT's increase over its loss-free, queue-free time
    ``rounds × baseline`` (an increase at least the wait itself). Both lie in [0, 1].
    """
    rtt_comp = min(rounds * rtt, max(plt - wait, 0.0)) if math.isfinite(rtt) else math.nan
    rtt_share = rtt_comp / plt if plt > 0 and math.isfinite(rtt_comp) else math.nan
    excess = plt - rounds * baseline if math.isfinite(baseline) else math.nan
    if wait <= 0:
        loss_share = 0.0
    else:
        loss_share = wait / max(excess, wait) if math.isfinite(excess) else math.nan
    rtt_dom = math.isfinite(rtt_share) and rtt_share >= share
    loss_dom = math.isfinite(loss_share) and loss_share >= share
    if rtt_dom and loss_dom:  # both: the larger cause of the increase (queueing vs waiting for retransmissions)
        label = "loss-dominated" if wait >= rounds * (rtt - baseline) else "rtt-dominated"
    else:
        label = "loss-dominated" if loss_dom else "rtt-dominated" if rtt_dom else "neither"
    return label, rtt_comp, rtt_share, loss_share


def build_pages(
    transactions: Iterable[Any] = (),
    *,
    connections: Iterable[Any] = (),
    tls: Iterable[Any] = (),
    dns: Iterable[DnsQuery] = (),
    options: WebOptions | None = None,
    **deprecated: Any,
) -> list[Page]:
    """Group transactions and TLS connections into page loads and score each.

    Parameters
    ----------
    transactions : iterable of qoe.web.http.Transaction
    connections : iterable of qoe.web.tcp.Connection, keyword-only
        The TCP connections (RTT, retransmissions, SYN times); without them RTT figures
        are NaN and the diagnosis ``neither``.
    tls : iterable of qoe.web.tls.TlsSession, keyword-only
    dns : iterable of DnsQuery, keyword-only
        DNS queries (:func:`qoe.web.pages.dns_queries`): a page starts at its main host's
        first query.
    options : WebOptions, optional, keyword-only
        ``idle_gap_s`` (quiet time that ends a page, default 2 s); the G.1030 mapping
        (:func:`qoe.web.g1030.mos`): ``preset`` ``"access"`` (0.56 s → 5, 6 s → 1) or
        ``"backbone"`` (0.85 s), or custom ``t_min``/``t_max``; ``share`` (what makes a PLT
        RTT- or loss-dominated, default 0.5).
    **deprecated
        ``idle_gap_s``, ``preset``, ``bounds=(t_min, t_max)``, ``share`` as keywords: still
        taken for one release, with a DeprecationWarning; with ``options`` an InputError.

    Returns
    -------
    list of Page
        In order of their start.
    """
    opts = _resolve("build_pages", options, deprecated)
    idle_gap_s, preset, bounds, share = opts.idle_gap_s, opts.preset, _custom_bounds(opts), opts.share
    conns = {c.id.index: c for c in connections}
    items = _http_items(transactions) + _tls_items(tls, conns)
    by_client: dict[str, list[_Item]] = {}
    for it in sorted(items, key=lambda i: (i.start_ns, i.conn)):
        by_client.setdefault(it.client, []).append(it)
    queries: dict[str, list[DnsQuery]] = {}
    for q in dns:
        queries.setdefault(q.client, []).append(q)
    for qs in queries.values():
        qs.sort(key=_query_ts)  # by time, so that a page looks only at its own window
    gap = int(round(idle_gap_s * _NS))
    groups = [(client, g) for client, its in by_client.items() for g in _group(its, gap, conns)]
    groups.sort(key=lambda cg: cg[1][0].start_ns)
    out = []
    for index, (client, group) in enumerate(groups):
        out.append(_page(index, client, group, conns, queries.get(client, []), gap, preset, bounds, share,
                         opts.base_rtt_s))
    return out


def _query_ts(q: DnsQuery) -> int:
    return q.ts_ns


def _page(index: int, client: str, group: list[_Item], conns: Mapping[int, Any], queries: list[DnsQuery],
          gap: int, preset: str, bounds: Any, share: float, base_rtt: float | None = None) -> Page:
    first = group[0]
    # the page's items read once (each figure below is what a pass of its own over them gave:
    # sets, counts, integer sums and maxima, so the order they are taken in changes nothing)
    used_set: set[int] = set()
    opened: set[int] = set()  # the page opened a connection when its first exchange there is the connection's first (or it is TLS)
    protocols_set: set[str] = set()
    idle_protocols: set[str] = set()
    txn_list: list[Any] = []
    syn_min: int | None = None
    end_objects: int | None = None  # the last byte of an object (a preconnect's holds none)
    end_any: int | None = None
    tls_bytes = hidden = unused = silent = silent_cut = 0
    hidden_cut = False  # a hidden QUIC connection's packets were cut by the snapshot length
    opaque: dict[str, int] = {}  # why a decrypted connection is not HTTP -> connections
    tls_complete = True
    tls13_hidden = False
    ech_hidden, ech_names = 0, set[str]()  # hidden connections that offered ECH, their server names in clear
    for it in group:
        ci = it.conn
        used_set.add(ci)
        txn, tls = it.txn, it.tls
        if tls is not None or (txn is not None and not txn.reused):
            opened.add(ci)
            # "fully loaded" starts at the page's first SYN (issue 22): a connection it opened
            # belongs to it from its SYN, also when its first item there came after another
            # connection's (decrypted HTTP/2: the document's request after a preconnect's
            # ClientHello)
            syn = opened_syn_ns(it, conns.get(ci))
            if syn is not None and (syn_min is None or syn < syn_min):
                syn_min = syn
        e = it.end_ns
        if end_any is None or e > end_any:
            end_any = e
        if it.preconnect:
            if not it.silent_client:
                unused += 1
        elif end_objects is None or e > end_objects:
            end_objects = e
        if it.silent_client:
            if snapshot_cut(conns.get(ci)):
                silent_cut += 1
            else:
                silent += 1
        if txn is not None:
            txn_list.append(txn)
            protocols_set.add(txn_protocol(txn))
        elif it.preconnect or it.opaque is not None:
            idle_protocols.add(it.protocol)  # carried no object: named only when nothing else is
        else:
            protocols_set.add(it.protocol)
        if tls is not None:
            tls_bytes += tls.server_bytes
            if not it.preconnect:
                if not tls.complete:
                    tls_complete = False
                if it.opaque is not None:
                    opaque[it.opaque] = opaque.get(it.opaque, 0) + 1
                else:
                    if txn is None:
                        hidden += 1
                        hidden_cut = hidden_cut or bool(getattr(tls, "cut_packets", 0))
                        if getattr(tls, "ech_offered", False) and tls.version == _TLS13:  # (ECH is TLS 1.3's)
                            ech_hidden += 1
                            ech_names.add(tls.server_name or "?")
                    if tls.version == _TLS13 and not tls.alpn:
                        tls13_hidden = True
    # the main document: the first request; a connection opened ahead (a preconnect, decrypted:
    # no request inside) may come first, it is no document
    main = first.txn if first.txn is not None or not first.preconnect else (txn_list[0] if txn_list else None)
    host = main.host if main is not None else first.server_name
    url = main.url if main is not None else (f"https://{first.server_name}/" if first.server_name else None)
    start, event = first.start_ns, ("request" if first.tls is None else "client-hello")
    used = sorted(used_set)
    page_conns = [conns[i] for i in used if i in conns]
    first_conn = conns.get(first.conn)
    if first_conn is not None and first.conn in opened and first_conn.syn_ts_ns is not None:
        start, event = min(start, first_conn.syn_ts_ns), "syn"
    if syn_min is not None and syn_min < start:
        start, event = syn_min, "syn"
    if queries:
        window = queries[bisect_left(queries, start - gap, key=_query_ts) : bisect_right(queries, start, key=_query_ts)]
        looked_up = [q.ts_ns for q in window if host and q.name.rstrip(".").lower() == host.split(":")[0].lower()]
        if looked_up:
            start, event = min(looked_up), "dns"
    # fully loaded ends at the last byte of an object: a connection opened and never used (a
    # preconnect) holds none, even when its handshake ends later (a backup connection after loss)
    end = end_objects if end_objects is not None else end_any
    plt = (end - start) / _NS
    loaded = onload_end_ns(txn_list)
    onload = (loaded - start) / _NS if loaded is not None and not hidden else math.nan
    ttfb = math.nan
    if main is not None and main.response_start_ns is not None:
        ttfb = (main.response_start_ns - start) / _NS
    elif first.tls is not None and first.tls.server_first_app_data_ns is not None:
        ttfb = (first.tls.server_first_app_data_ns - start) / _NS
    rtt, rtt_min = _rtt_of(page_conns)
    path = _critical_path(group)
    rounds = _round_trips([it for it, _, _ in path], conns, opened)
    wait = _path_wait(path, conns) / _NS
    retrans = 0
    for c in page_conns:
        retrans += c.client.retransmissions + c.server.retransmissions
    baseline, baseline_name = (base_rtt, "given") if base_rtt is not None else (rtt_min, "page minimum")
    label, rtt_comp, rtt_share, loss_share = _diagnose(plt, rounds, rtt, baseline, wait, share)
    txns = tuple(txn_list)
    nbytes = tls_bytes
    statuses = []
    complete = tls_complete
    for t in txns:
        nbytes += _response_bytes(t)
        if t.status is not None:
            statuses.append(t.status)
        if not t.complete:
            complete = False
    # a connection opened and never used (a preconnect) holds no object: its handshake, whole
    # or not, does not make the page partial (the note counts it)
    notes = []
    if not page_conns:
        notes.append("no TCP facts for the page's connections: RTT and loss unknown")
    if silent:
        notes.append(f"{silent} TLS connection(s) opened and never used (without keys: the client sent nothing "
                     "after the handshake, or closed the connection before it was whole, so no request)")
    if silent_cut:
        notes.append(f"{silent_cut} TLS connection(s) opened and never used (the snapshot length cut their records: "
                     "the client closed each without sending a byte after the server's first, so no request)")
    if unused:
        half = sum(1 for it in group if it.preconnect and not it.silent_client and not it.tls.complete)
        notes.append(f"{unused} TLS connection(s) opened and never used (decrypted: no request inside"
                     + (f"; {half} of them without a whole handshake)" if half else ")"))
    cut = [c.client.truncated_bytes + c.server.truncated_bytes for c in page_conns]
    if hidden and (any(cut) or hidden_cut):
        notes.append(f"encrypted: {hidden} connection(s) whose objects are not visible (their handshake and "
                     "bytes count; the capture's snapshot length cut their records or packets: no key log can open "
                     "them)")
    elif hidden:
        notes.append(f"encrypted without keys: {hidden} connection(s) whose objects are not visible (their "
                     "handshake and bytes count; give the browser's key log: --keylog, WebOptions(keylog=...))")
    if opaque:
        whys = "; ".join(why if len(opaque) == 1 else f"{n}: {why}" for why, n in sorted(opaque.items()))
        notes.append(f"decrypted, not HTTP: {sum(opaque.values())} connection(s) whose bytes and timing count, "
                     f"holding no object ({whys})")
    if not complete:
        reasons = {t.partial or t.error or "incomplete" for t in txns if not t.complete}
        cut_hs = []  # (the snapshot length cut their records: one reason, said once for all)
        for it in group:
            if it.tls is not None and not it.preconnect and not it.tls.complete:
                if snapshot_cut(conns.get(it.conn)):
                    cut_hs.append(it.tls)
                else:
                    reasons.add(_tls_incomplete(it.tls))
        if cut_hs:
            quic = sum(1 for s in cut_hs if getattr(s, "version_name", None) == "QUIC")
            kind = "QUIC" if quic == len(cut_hs) else "TLS" if not quic else "TLS and QUIC"
            reasons.add(f"the snapshot length cut the records of {kind} connection(s) "
                        + ", ".join(str(i) for i in sorted(s.connection for s in cut_hs)))
        notes.append("partial: " + "; ".join(sorted(reasons)))
    if any(cut):
        notes.append(f"the capture's snapshot length cut the packets: {sum(cut)} payload bytes not captured on "
                     f"{sum(1 for n in cut if n)} connection(s) (what they carried is partial; the TCP timing "
                     "holds)")
    if math.isfinite(rtt) and rtt_comp < rounds * rtt:
        notes.append(f"RTT component capped at the time not spent waiting for retransmissions "
                     f"({rounds} round trips x {rtt:.3f} s = {rounds * rtt:.3f} s > {plt - wait:.3f} s)")
    protocols = sorted(protocols_set or idle_protocols)
    if tls13_hidden and not (any(cut) or hidden_cut):  # (cut: no key log would show them)
        notes.append("TLS 1.3: the protocol inside (ALPN) is encrypted; objects are not visible without a key log")
    if ech_names:
        # (draft-ietf-tls-esni §6.2: a client without ECH keys sends a GREASE extension that looks
        # the same; Chromium does on every connection: without keys the two cannot be told apart)
        notes.append(f"Encrypted Client Hello offered on {ech_hidden} connection(s) whose objects are not visible: "
                     "if it was used (not GREASE, which looks the same without keys) the server name in clear "
                     f"({', '.join(sorted(ech_names))}) is a public name, not the one asked for")
    b = tuple(bounds) if bounds is not None else None
    mos = _mos(plt, preset, b)
    return _make_page(
        client=client, index=index, url=url, host=host,
        scheme="https" if first.tls is not None or (url or "").startswith("https:") else "http",
        protocol="; ".join(protocols),
        start_ns=start, end_ns=end, start_event=event, plt_s=plt, onload_s=onload, ttfb_s=ttfb,
        objects=len(txns) + hidden, connections=len(used), new_connections=len(opened), bytes=int(nbytes),
        rtt_s=rtt, rtt_min_s=rtt_min, rtt_baseline_s=baseline, rtt_baseline=baseline_name, round_trips=rounds,
        rtt_component_s=rtt_comp, retransmissions=int(retrans),
        loss_wait_s=wait, diagnosis=label, rtt_share=rtt_share, loss_share=loss_share, mos=mos,
        preset="custom" if b is not None else preset, complete=complete,
        statuses=tuple(statuses), notes=tuple(notes), transactions=txns,
    )


#: The request-target browsers fetch a page's icon from when the page declares none
#: (WHATWG HTML, "rel=icon": the user agent may fetch ``/favicon.ico``); Chromium asks for it
#: once the load event has fired (seen on every capture of data/web/browser).
FAVICON_PATH = "/favicon.ico"


def _fetch_dest(t: Any) -> str | None:
    for name, value in getattr(t, "request_headers", ()) or ():
        # (str.lower keeps the length of every character but U+0130, which no name of 14
        # characters lowering to this one holds: the length test only skips the call)
        if len(name) == 14 and name.lower() == "sec-fetch-dest":
            return value.strip().lower()
    return None


def onload_end_ns(transactions: Iterable[Any]) -> int | None:
    """The estimated end of the load event: the last byte of the objects that delay it.

    A capture cannot see the load event; what it shows is which requests the page's document,
    stylesheets and scripts made before it, and the requests a browser makes only after it:

    * a request whose ``Sec-Fetch-Dest`` is ``empty`` comes from a script's ``fetch()`` or
      ``XMLHttpRequest`` (W3C Fetch Metadata Request Headers §2.1; WHATWG Fetch: the request's
      destination is the empty string), which does not delay the load event (WHATWG HTML
      §8.1.4.1: only the document's elements' fetches, images, scripts, stylesheets, frames,
      do). Browsers send the header on HTTPS only (a "potentially trustworthy" origin);
    * the browser's own icon request (``GET /favicon.ico`` when the page declares no icon,
      :data:`FAVICON_PATH`) marks the load event: Chromium sends it once the event fired, so
      every request that starts after it is late too (on cleartext HTTP, where no
      ``Sec-Fetch-Dest`` is sent, this is what separates a script's late fetches).

    The objects that delay the load event are the others: the page's transactions that are
    not script fetches and whose request started before the first icon request. The estimate
    is the last byte of the last of them (None when there is none). It lies before the
    browser's ``loadEventEnd`` by the time the browser needs after the last byte (decoding,
    layout, running the load handlers); see docs/guide/web.md for the differences measured.
    """
    txns = []  # (transaction, whether it is the icon request)
    cut = None
    for t in transactions:
        start = t.request_start_ns
        if start is None:
            continue
        icon = (t.target or "").split("?", 1)[0] == FAVICON_PATH
        txns.append((t, icon))
        if icon and (cut is None or start < cut):
            cut = start
    end = None
    for t, icon in txns:
        if icon or (cut is not None and t.request_start_ns >= cut) or _fetch_dest(t) == "empty":
            continue
        e = t.response_end_ns or t.response_start_ns or t.request_end_ns or t.request_start_ns
        if end is None or e > end:
            end = e
    return end


def _tls_incomplete(s: Any) -> str:
    """Why a TLS connection's handshake is not whole (TlsSession.complete is False)."""
    where = f"{'QUIC' if getattr(s, 'version_name', None) == 'QUIC' else 'TLS'} connection {s.connection}"
    if s.error:
        return f"{where}: {s.error}"
    if s.client_hello_ns is None:
        return f"{where}: no ClientHello seen"
    if s.server_hello_ns is None:
        return f"{where}: ClientHello never answered (no ServerHello)"
    return f"{where}: end of the handshake not seen"


def _critical_path(group: list[_Item]) -> list[tuple[_Item, int, int]]:
    """The page's critical path: the chain of items that ended last, as disjoint intervals.

    From the item whose last byte ends the page, back through, at each step, the item that
    ended last before this one became active (its SYN when it opened its connection, else
    its first request byte). Each item's interval runs from its activity to its last byte,
    cut at the next one's activity, so the intervals do not overlap and lie inside the PLT.
    """
    order = sorted(group, key=lambda i: (i.end_ns, i.start_ns, i.conn))
    ends = [i.end_ns for i in order]
    path: list[tuple[_Item, int, int]] = []
    k = len(order) - 1
    bound: int | None = None
    while k >= 0:
        it = order[k]
        b = it.end_ns if bound is None else min(it.end_ns, bound)
        a = min(it.active_ns, b)
        path.append((it, a, b))
        bound = a
        k = bisect_right(ends, a, hi=k) - 1  # the latest-ending item that ended by then
    return path[::-1]


def _path_wait(path: list[tuple[_Item, int, int]], conns: Mapping[int, Any]) -> int:
    """ns the critical path spent waiting for retransmissions and in stalls.

    Per item of the path, the union of its connection's intervals ``[original, retransmission]``
    (non-spurious retransmissions, ``qoe.web.tcp``) and stall intervals, cut to the item's
    interval: time the page's last chain could not go on because bytes were lost.
    """
    total = 0
    for it, a, b in path:
        c = conns.get(it.conn)
        if c is None or b <= a:
            continue
        ivs = [(max(e.original_ts_ns, a), min(e.ts_ns, b)) for e in c.retransmission_events
               if not e.spurious and e.original_ts_ns is not None]
        ivs += [(max(x, a), min(y, b)) for x, y in (*c.client.stall_intervals, *c.server.stall_intervals)]
        end = a
        for x, y in sorted(iv for iv in ivs if iv[0] < iv[1]):
            if y > end:
                total += y - max(x, end)
                end = y
    return total


_make_page = builder(Page)  # one per page, see qoe._records
