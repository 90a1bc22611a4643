"""A tiny HTTP/3 server and client on aioquic's API, for data/web/tls/make_quic.sh.

``python quic_pair.py server SITE_DIR CERT KEY PORT [v1-only | retry]`` serves the files of SITE_DIR over
HTTP/3 (RFC 9114) on 127.0.0.1:PORT until killed (QUIC versions 1 and 2, aioquic's default, or
1 only; with ``retry``, every client's first Initial is answered with a Retry packet, RFC 9000
§8.1.2 and §17.2.5, as a server validating addresses does); ``python quic_pair.py client PORT KEYLOG [--negotiate-v2 | --v2-then-v1 | --rebind-after=N] PATH...``
fetches each PATH over one QUIC connection (with ``--negotiate-v2`` begun in version 1 and
offering 2 first, which the server takes: RFC 9368's compatible version negotiation; with
``--v2-then-v1`` begun in version 2, which a version 1 server answers with Version Negotiation;
with ``--rebind-after=N`` the rest sent from a new local port after N responses, as a NAT's
rebinding shows the server), the requests all sent at once (one bidirectional
stream each), writes the NSS key log (QUIC's secrets lines) to KEYLOG and prints one line per
response: path, status, body bytes. A missing file is answered 404. Both ends are aioquic's
(QuicConnectionProtocol + H3Connection); nothing here is from aioquic's example scripts.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import sys

from aioquic.asyncio import connect, serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ProtocolNegotiated
from aioquic.quic.packet import QuicProtocolVersion

TYPES = {".html": b"text/html", ".css": b"text/css", ".jpg": b"image/jpeg"}


class Server(QuicConnectionProtocol):
    site = "."

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
                head = dict(ev.headers)
                path = os.path.join(self.site, head[b":path"].decode().lstrip("/"))
                try:
                    body = open(path, "rb").read()
                    hdrs = [(b":status", b"200"), (b"content-type", TYPES.get(os.path.splitext(path)[1], b"application/octet-stream"))]
                except OSError:
                    body = b"not found\n"
                    hdrs = [(b":status", b"404"), (b"content-type", b"text/plain")]
                if head[b":method"] == b"HEAD":
                    body = b""  # (no content-length: aioquic's client checks it against the DATA)
                else:
                    hdrs.append((b"content-length", str(len(body)).encode()))
                self.h3.send_headers(ev.stream_id, hdrs, end_stream=not body)
                if body:
                    self.h3.send_data(ev.stream_id, body, end_stream=True)
                self.transmit()


class Client(QuicConnectionProtocol):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.h3 = H3Connection(self._quic)
        self.waiting = {}

    def get(self, path, method=b"GET"):
        sid = self._quic.get_next_available_stream_id()
        self.h3.send_headers(sid, [(b":method", method), (b":scheme", b"https"), (b":authority", b"www.example.com"),
                                   (b":path", path.encode()), (b"user-agent", b"qoe-quic-pair")], end_stream=True)
        fut = asyncio.get_running_loop().create_future()
        self.waiting[sid] = [fut, path, None, 0]
        self.transmit()
        return fut

    def quic_event_received(self, event):
        for ev in self.h3.handle_event(event):
            w = self.waiting.get(ev.stream_id)
            if w is None:
                continue
            if isinstance(ev, HeadersReceived):
                w[2] = dict(ev.headers)[b":status"].decode()
            elif isinstance(ev, DataReceived):
                w[3] += len(ev.data)
            if ev.stream_ended and not w[0].done():
                w[0].set_result(f"{w[1]}\t{w[2]}\t{w[3]}")


async def client(port, keylog, paths):
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=ssl.CERT_NONE,
                            server_name="www.example.com", secrets_log_file=open(keylog, "a"))
    if paths and paths[0] == "--v2-then-v1":
        # first flight in QUIC version 2 (RFC 9369) to a server of version 1 only: its Version
        # Negotiation packet (RFC 9000 §6) lists 1, and the client begins again in 1
        paths = paths[1:]
        cfg.original_version = QuicProtocolVersion.VERSION_2
        cfg.supported_versions = [QuicProtocolVersion.VERSION_2, QuicProtocolVersion.VERSION_1]
    if paths and paths[0] == "--negotiate-v2":
        # first flight in QUIC version 1, version 2 (RFC 9369) preferred in its version_information
        # transport parameter: the server switches to 2 (compatible version negotiation, RFC 9368)
        paths = paths[1:]
        cfg.original_version = QuicProtocolVersion.VERSION_1
        cfg.supported_versions = [QuicProtocolVersion.VERSION_2, QuicProtocolVersion.VERSION_1]
    rebind = None
    if paths and paths[0].startswith("--rebind-after="):
        # after that many responses the client's datagrams leave from a new local port, the
        # connection going on (what a NAT's rebinding shows the server, RFC 9000 §9.3)
        rebind, paths = int(paths[0].split("=", 1)[1]), paths[1:]
    async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client) as c:
        lines = []
        for part in ([paths] if rebind is None else [paths[:rebind], paths[rebind:]]):
            if lines:  # the same protocol object on a new socket: aioquic's connection is sans-IO
                await asyncio.get_running_loop().create_datagram_endpoint(lambda: c, local_addr=("::", 0))
            asks = [c.get(p[5:], b"HEAD") if p.startswith("HEAD ") else c.get(p) for p in part]
            lines += await asyncio.wait_for(asyncio.gather(*asks), 10)
        print("\n".join(lines))


async def server(site, cert, key, port, versions=None):
    cfg = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    if versions == "v1-only":
        cfg.supported_versions = [QuicProtocolVersion.VERSION_1]
    cfg.load_cert_chain(cert, key)
    Server.site = site
    await serve("127.0.0.1", port, configuration=cfg, create_protocol=Server, retry=versions == "retry")
    await asyncio.sleep(60)  # bounded: the script kills it earlier


if __name__ == "__main__":
    if sys.argv[1] == "server":
        asyncio.run(server(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), *sys.argv[6:7]))
    else:
        asyncio.run(client(int(sys.argv[2]), sys.argv[3], sys.argv[4:]))
