"""Loopback HTTP/1.1 server used by make_samples.sh to produce the test captures.

Static files (with Content-Length, Last-Modified and If-Modified-Since -> 304 from
http.server.SimpleHTTPRequestHandler) plus a few endpoints whose framing the tests need:

/chunked    chunked body with a chunk extension and a trailer field (RFC 9112 §7.1)
/nocontent  204 No Content
/close      HTTP/1.1 200 without Content-Length, body ends when the server closes (RFC 9112 §6.3 item 8)
/upload     POST; http.server answers Expect: 100-continue with an interim 100 (RFC 9110 §10.1.1)

Usage: python3 server.py PORT [--tls CERT KEY] [--http10]
"""

import http.server
import ssl
import sys


class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Trailer", "X-Checksum")
            self.end_headers()
            parts = [b"hello, ", b"chunked " * 40, b"world\n"]
            for i, p in enumerate(parts):
                ext = b";note=first" if i == 0 else b""
                self.wfile.write(b"%x%s\r\n%s\r\n" % (len(p), ext, p))
            self.wfile.write(b"0\r\nX-Checksum: 1234\r\n\r\n")
            return
        if self.path == "/nocontent":
            self.send_response(204)
            self.end_headers()
            return
        if self.path == "/close":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"until the server closes\n" * 50)
            self.close_connection = True
            return
        super().do_GET()

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        out = b"received %d bytes\n" % len(body)
        self.send_response(201)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def main():
    port = int(sys.argv[1])
    if "--http10" in sys.argv:
        Handler.protocol_version = "HTTP/1.0"
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    if "--tls" in sys.argv:
        i = sys.argv.index("--tls")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[i + 1], sys.argv[i + 2])
        ctx.set_alpn_protocols(["http/1.1"])
        httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
