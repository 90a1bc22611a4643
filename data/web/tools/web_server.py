#!/usr/bin/env python3
"""Static file server for the web samples: Python's own http.server handler, with the knobs the
samples need and nothing else (standard library only).

    python3 tools/web_server.py --directory site --bind ADDR --port N
        [--protocol HTTP/1.0|HTTP/1.1] [--chunked GLOB]... [--no-length GLOB]...
        [--tls CERT KEY]

* --protocol HTTP/1.1: persistent connections (http.server's BaseHTTPRequestHandler keeps the
  connection open after a response with a length, RFC 9112 §9.3); HTTP/1.0 (the default, like
  `python3 -m http.server`): one response per connection, then close.
* --chunked GLOB: files whose name matches are sent with Transfer-Encoding: chunked (RFC 9112
  §7.1), CHUNK bytes per chunk, each chunk one write; only to HTTP/1.1 requests on an HTTP/1.1
  server (else close-delimited).
* --no-length GLOB: files whose name matches are sent without Content-Length and the connection
  is closed after the body (a close-delimited body, RFC 9112 §6.3 rule 8).
* --tls CERT KEY: HTTPS (the handshake runs in the connection's own thread).
* Nagle's algorithm is off on every connection (TCP_NODELAY, as keep-alive servers such as nginx
  do by default); the server's TCP congestion control is whatever the namespace's route says.

Each request is logged to stderr as "<epoch seconds> <client> \"<request line>\" <status> <size>".
"""

import argparse
import fnmatch
import functools
import os
import ssl
import sys
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

CHUNK = 4096


class Handler(SimpleHTTPRequestHandler):
    disable_nagle_algorithm = True
    chunked = ()
    no_length = ()

    def setup(self):
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()
        super().setup()

    def log_message(self, fmt, *args):
        sys.stderr.write(f"{time.time():.6f} {self.address_string()} {fmt % args}\n")

    def _file(self):
        """The file a GET names (a directory's index.html), or None."""
        path = self.translate_path(self.path)
        if os.path.isdir(path):
            path = os.path.join(path, "index.html")
        return path if os.path.isfile(path) else None

    def do_GET(self):
        path = self._file()
        name = os.path.basename(path) if path else ""
        chunk = any(fnmatch.fnmatch(name, g) for g in self.chunked)
        close = any(fnmatch.fnmatch(name, g) for g in self.no_length)
        if not path or not (chunk or close):
            return super().do_GET()
        with open(path, "rb") as f:
            body = f.read()
        chunk = chunk and self.protocol_version == "HTTP/1.1" and self.request_version == "HTTP/1.1"
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Last-Modified", self.date_time_string(int(os.stat(path).st_mtime)))
        if chunk:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if chunk:
            for i in range(0, len(body), CHUNK):
                piece = body[i : i + CHUNK]
                self.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.wfile.write(body)


class Server(ThreadingHTTPServer):
    ssl_context = None

    def get_request(self):
        sock, addr = super().get_request()
        if self.ssl_context is not None:
            sock = self.ssl_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request, client_address):
        sys.stderr.write(f"{time.time():.6f} {client_address[0]} error: {sys.exc_info()[1]!r}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--directory", required=True)
    ap.add_argument("--bind", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--protocol", choices=("HTTP/1.0", "HTTP/1.1"), default="HTTP/1.0")
    ap.add_argument("--chunked", action="append", default=[], metavar="GLOB")
    ap.add_argument("--no-length", action="append", default=[], metavar="GLOB")
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    a = ap.parse_args()
    handler = type("H", (Handler,), {"protocol_version": a.protocol, "chunked": tuple(a.chunked),
                                     "no_length": tuple(a.no_length)})
    server = Server((a.bind, a.port), functools.partial(handler, directory=a.directory))
    if a.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*a.tls)
        server.ssl_context = ctx
    sys.stderr.write(f"serving {a.directory} on {a.bind}:{a.port} {a.protocol}"
                     f"{' TLS' if a.tls else ''}\n")
    sys.stderr.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
