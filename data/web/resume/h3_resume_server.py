#!/usr/bin/env python3
"""A small HTTP/3 file server on aioquic's API that issues session tickets and resumes them.

Usage: h3_resume_server.py --root DIR --cert CERT --key KEY --bind IP [--idle-timeout-s 1]
       [--secrets-log FILE] [--access-log FILE]

aioquic's servers put the early_data extension (max_early_data_size 0xffffffff, RFC 9001 §4.6.1)
in every ticket they issue, so a client that resumes may send 0-RTT. Tickets are kept in memory
(``session_ticket_handler`` / ``session_ticket_fetcher``). A short idle timeout (RFC 9000 §10.1)
closes an idle connection so the client's next load needs a new one. Every response: 200 with
the file (404 otherwise), Cache-Control: no-store. The access log has one JSON line per request
with the server's view: whether the connection was resumed and its early data accepted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import mimetypes
import time
from pathlib import Path

from aioquic.asyncio import QuicConnectionProtocol, serve
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import HandshakeCompleted, ProtocolNegotiated

TICKETS: dict[bytes, object] = {}
ROOT = Path(".")
ACCESS_LOG = None


class Static(QuicConnectionProtocol):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.h3 = None
        self.resumed = None
        self.early = None

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
            self.h3 = H3Connection(self._quic)
        if isinstance(event, HandshakeCompleted):
            self.resumed, self.early = event.session_resumed, event.early_data_accepted
        if self.h3 is None:
            return
        for ev in self.h3.handle_event(event):
            if not isinstance(ev, HeadersReceived):
                continue
            head = {k.decode(): v.decode() for k, v in ev.headers}
            path = head.get(":path", "/").split("?")[0]
            file = (ROOT / path.lstrip("/")).resolve()
            ok = file.is_file() and ROOT.resolve() in file.parents
            body = file.read_bytes() if ok else b"not found\n"
            ctype = (mimetypes.guess_type(file.name)[0] or "application/octet-stream") if ok else "text/plain"
            self.h3.send_headers(ev.stream_id, [(b":status", b"200" if ok else b"404"), (b"content-type", ctype.encode()),
                                                (b"content-length", str(len(body)).encode()),
                                                (b"cache-control", b"no-store"), (b"timing-allow-origin", b"*")])
            self.h3.send_data(ev.stream_id, body, end_stream=True)
            self.transmit()
            if ACCESS_LOG is not None:
                ACCESS_LOG.write(json.dumps({"time": round(time.time(), 6), "connection": self._quic.host_cid.hex(),
                                             "stream_id": ev.stream_id, "path": head.get(":path"),
                                             "status": 200 if ok else 404, "body_bytes": len(body),
                                             "resumed": self.resumed, "early_data_accepted": self.early}) + "\n")
                ACCESS_LOG.flush()


async def main(a: argparse.Namespace) -> None:
    config = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN, idle_timeout=a.idle_timeout_s)
    config.load_cert_chain(a.cert, a.key)
    if a.secrets_log:
        config.secrets_log_file = open(a.secrets_log, "a", buffering=1)
    await serve(a.bind, 443, configuration=config, create_protocol=Static,
                session_ticket_fetcher=TICKETS.pop, session_ticket_handler=lambda t: TICKETS.__setitem__(t.ticket, t))
    print(f"serving HTTP/3 on {a.bind}:443", flush=True)
    await asyncio.sleep(a.max_seconds)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", required=True)
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--bind", required=True)
    p.add_argument("--idle-timeout-s", type=float, default=1.0)
    p.add_argument("--secrets-log")
    p.add_argument("--access-log")
    p.add_argument("--max-seconds", type=float, default=60.0)
    args = p.parse_args()
    ROOT = Path(args.root)
    if args.access_log:
        ACCESS_LOG = open(args.access_log, "a")
    asyncio.run(main(args))
