#!/usr/bin/env python3
"""A small static HTTP/3 server on aioquic (RFC 9114 over QUIC v1, RFC 9000), for the captures.

Usage: h3_server.py --root DIR --cert PEM --key PEM --bind IP [--bind IP ...] [--port 443]
                    [--secrets-log FILE] [--access-log FILE]

Serves DIR/<host>/<path> for a GET of https://<host>/<path> (the request's ``:authority``), one
UDP socket per --bind address (a reply must leave from the address the client sent to). Every
response carries ``timing-allow-origin: *`` (W3C Resource Timing Level 2 §4.5: without it a
cross-origin entry's detailed times are zero) and ``access-control-allow-origin: *`` (the page's
cross-origin fetch() after its load event). The access log has one JSON line per request
(wall-clock time, connection, stream id, path, status, body size): the server's truth.
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
from aioquic.quic.events import ProtocolNegotiated, QuicEvent

ROOT: Path
ACCESS_LOG = None
mimetypes.add_type("application/javascript", ".js")


class StaticH3(QuicConnectionProtocol):
    """One QUIC connection: an H3Connection over it, a static file for each request stream."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._h3: H3Connection | None = None

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
            self._h3 = H3Connection(self._quic)
        if self._h3 is None:
            return
        for h3_event in self._h3.handle_event(event):
            if isinstance(h3_event, HeadersReceived):
                self._respond(h3_event)

    def _respond(self, event: HeadersReceived) -> None:
        assert self._h3 is not None
        head = {k.decode(): v.decode() for k, v in event.headers if k.startswith(b":")}
        host = head.get(":authority", "").split(":")[0]
        path = head.get(":path", "/").split("?")[0]
        if path.endswith("/"):
            path += "index.html"
        file = (ROOT / host / path.lstrip("/")).resolve()
        ok = head.get(":method") in ("GET", "HEAD") and file.is_file() and ROOT.resolve() in file.parents
        body = file.read_bytes() if ok else b"not found\n"
        status = b"200" if ok else b"404"
        ctype = (mimetypes.guess_type(file.name)[0] or "application/octet-stream") if ok else "text/plain"
        headers = [
            (b":status", status),
            (b"server", b"qoe-h3-static"),
            (b"content-type", ctype.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"timing-allow-origin", b"*"),
            (b"access-control-allow-origin", b"*"),
            (b"cache-control", b"no-store"),
        ]
        head_only = head.get(":method") == "HEAD"
        self._h3.send_headers(event.stream_id, headers, end_stream=head_only)
        if not head_only:
            self._h3.send_data(event.stream_id, body, end_stream=True)
        self.transmit()
        if ACCESS_LOG is not None:
            ACCESS_LOG.write(json.dumps({
                "time": round(time.time(), 6), "connection": self._quic.host_cid.hex(),
                "stream_id": event.stream_id, "method": head.get(":method"), "authority": host,
                "path": head.get(":path"), "status": int(status), "body_bytes": len(body),
            }) + "\n")
            ACCESS_LOG.flush()


async def main(args: argparse.Namespace) -> None:
    config = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    config.load_cert_chain(args.cert, args.key)
    if args.secrets_log:
        config.secrets_log_file = open(args.secrets_log, "a", buffering=1)
    for ip in args.bind:
        await serve(ip, args.port, configuration=config, create_protocol=StaticH3)
    print(f"serving HTTP/3 on {', '.join(args.bind)} port {args.port}", flush=True)
    await asyncio.Future()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--bind", action="append", required=True)
    parser.add_argument("--port", type=int, default=443)
    parser.add_argument("--secrets-log")
    parser.add_argument("--access-log")
    a = parser.parse_args()
    ROOT = Path(a.root)
    if a.access_log:
        ACCESS_LOG = open(a.access_log, "a")
    asyncio.run(main(a))
