"""QUIC 0-RTT on aioquic's API, for data/web/tls/make_quic_0rtt.sh (issue 22).

``python quic_0rtt.py server CERT KEY PORT`` serves HTTP/3 on 127.0.0.1:PORT: every request is
answered 200 with a small text body naming the path; it issues session tickets (aioquic's
servers allow early data on them) and keeps them in memory. ``python quic_0rtt.py client PORT
KEYLOG`` makes two connections: the first fetches ``/first`` and keeps the server's session
ticket; the second resumes with it and sends ``GET /early`` before the handshake completes
(``wait_connected=False``): 0-RTT packets (RFC 9001 §4.6.1), keys from the key log's
``CLIENT_EARLY_TRAFFIC_SECRET``. It prints, per connection: path, status, body bytes, and
whether the server accepted the early data (aioquic's ``HandshakeCompleted.early_data_accepted``).
``python quic_0rtt.py server CERT KEY PORT reject``: the server issues tickets but finds none it is
shown (as a server restarted with new ticket keys): the client's resumption fails, its early data
is rejected (RFC 9001 §4.6.2) and it sends the request again after the handshake.
"""

from __future__ import annotations

import asyncio
import ssl
import sys

from aioquic.asyncio import connect, serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import HandshakeCompleted, ProtocolNegotiated

TICKETS: dict[bytes, object] = {}


class Server(QuicConnectionProtocol):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.h3 = None

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
            self.h3 = H3Connection(self._quic)
        if self.h3 is None:
            return
        for ev in self.h3.handle_event(event):
            if isinstance(ev, HeadersReceived):
                path = dict(ev.headers)[b":path"]
                body = b"served " + path + b"\n"
                self.h3.send_headers(ev.stream_id, [(b":status", b"200"), (b"content-type", b"text/plain"),
                                                    (b"content-length", str(len(body)).encode())])
                self.h3.send_data(ev.stream_id, body, end_stream=True)
                self.transmit()


class Client(QuicConnectionProtocol):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.h3 = H3Connection(self._quic)
        self.waiting = {}
        self.early = None

    def get(self, path):
        sid = self._quic.get_next_available_stream_id()
        self.h3.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"www.example.com"),
                                   (b":path", path.encode()), (b"user-agent", b"qoe-quic-0rtt")], end_stream=True)
        fut = asyncio.get_running_loop().create_future()
        self.waiting[sid] = [fut, path, None, 0]
        self.transmit()
        return fut

    def quic_event_received(self, event):
        if isinstance(event, HandshakeCompleted):
            self.early = event.early_data_accepted
        for ev in self.h3.handle_event(event):
            w = self.waiting.get(ev.stream_id)
            if w is None:
                continue
            if isinstance(ev, HeadersReceived):
                w[2] = dict(ev.headers)[b":status"].decode()
            elif isinstance(ev, DataReceived):
                w[3] += len(ev.data)
            if ev.stream_ended and not w[0].done():
                w[0].set_result(w)


async def client(port, keylog):
    tickets = []
    log = open(keylog, "a")
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=ssl.CERT_NONE,
                            server_name="www.example.com", secrets_log_file=log)
    async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client,
                       session_ticket_handler=tickets.append) as c:
        w = await asyncio.wait_for(c.get("/first"), 10)
        await asyncio.sleep(0.3)  # the NewSessionTicket
        print(f"{w[1]}\t{w[2]}\t{w[3]}\tearly={c.early}")
    cfg2 = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=ssl.CERT_NONE,
                             server_name="www.example.com", secrets_log_file=log, session_ticket=tickets[-1])
    async with connect("127.0.0.1", port, configuration=cfg2, create_protocol=Client, wait_connected=False) as c:
        w = await asyncio.wait_for(c.get("/early"), 10)
        await asyncio.sleep(0.2)
        print(f"{w[1]}\t{w[2]}\t{w[3]}\tearly={c.early}")


async def server(cert, key, port, reject=False):
    cfg = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    cfg.load_cert_chain(cert, key)
    fetch = (lambda ticket: None) if reject else TICKETS.pop
    await serve("127.0.0.1", port, configuration=cfg, create_protocol=Server,
                session_ticket_fetcher=fetch, session_ticket_handler=lambda t: TICKETS.__setitem__(t.ticket, t))
    await asyncio.sleep(30)  # bounded: the script kills it earlier


if __name__ == "__main__":
    if sys.argv[1] == "server":
        asyncio.run(server(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:] == ["reject"]))
    else:
        asyncio.run(client(int(sys.argv[2]), sys.argv[3]))
