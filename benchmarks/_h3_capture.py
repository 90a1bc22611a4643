"""HTTP/3 page loads made in memory with aioquic, written as a capture and a key log.

Not a benchmark itself (``run_all.py`` skips files starting with ``_``): ``web_h3.py`` uses it.
Each page load is one QUIC v1 connection (aioquic's client and server, ``QuicConnection`` +
``H3Connection``, in this process: no socket, no network) from its own client address to
198.51.100.2:443: the client asks for the document, then for the page's other objects at
once, one request stream each; the server answers each with a body of the object's size.
The datagrams cross a simulated path (one-way delay :data:`DELAY_S`) in the order of their
arrival times; each is written to the capture as the client's side sees it (what it sends,
when it sends it; what it receives, when it arrives), in Ethernet/IPv4/UDP (RFC 768; the
checksums are computed by dpkt). Every connection has its own connection ids, randoms and
keys, so a reader that tracks QUIC connections by their ids (tshark) sees each one; the
client's key log (``QUIC_``-less NSS lines, as aioquic writes them) opens all.
"""

from __future__ import annotations

import datetime
import heapq
import ipaddress
import socket
import ssl
import tempfile

import dpkt
from aioquic.buffer import Buffer
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.events import HandshakeCompleted, ProtocolNegotiated
from aioquic.quic.packet import pull_quic_header
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

SERVER = ("198.51.100.2", 443)
HOST = "www.example.com"
DELAY_S = 0.010  # one way: a 20 ms round trip
#: The page: a document and 40 objects of these sizes (bytes; 41 objects, 200 kB in all, as
#: the browser captures' page of data/web/browser/README.md).
SIZES = [15_000] + [1_500 + (k * 1_711) % 6_000 for k in range(40)]


def _certificate(tmp: str) -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOST)])
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(HOST)]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = f"{tmp}/cert.pem", f"{tmp}/key.pem"
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return cert_path, key_path


def _frame(src: tuple[str, int], dst: tuple[str, int], payload: bytes) -> bytes:
    udp = dpkt.udp.UDP(sport=src[1], dport=dst[1], data=payload)
    udp.ulen = 8 + len(payload)
    ip = dpkt.ip.IP(src=socket.inet_aton(src[0]), dst=socket.inet_aton(dst[0]), p=dpkt.ip.IP_PROTO_UDP, ttl=64,
                    data=udp)
    ip.len = 20 + udp.ulen
    eth = dpkt.ethernet.Ethernet(src=b"\x02\x00\x00\x00\x00\x01", dst=b"\x02\x00\x00\x00\x00\x02",
                                 type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
    return bytes(eth)


def _page(writer: dpkt.pcap.Writer, client: tuple[str, int], start: float, keylog, cert: str, key: str) -> float:
    """One page load from ``client`` beginning at ``start`` (s); the time its last datagram arrived."""
    cc = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name=HOST, verify_mode=ssl.CERT_NONE,
                           secrets_log_file=keylog)
    sc = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    sc.load_cert_chain(cert, key)
    cq = QuicConnection(configuration=cc)
    ch = H3Connection(cq)
    sq: QuicConnection | None = None
    sh: H3Connection | None = None
    cq.connect(SERVER, now=start)
    flight: list[tuple[float, int, int, bytes]] = []  # (arrival, seq, to the client?, datagram)
    seq = 0
    now = start
    answered = 0
    asked = False
    closed = False
    last = start

    def send(conn: QuicConnection, to_client: bool) -> None:
        nonlocal seq
        for data, _ in conn.datagrams_to_send(now=now):
            seq += 1
            heapq.heappush(flight, (now + DELAY_S, seq, to_client, data))
            if not to_client:
                writer.writepkt(_frame(client, SERVER, data), ts=now)

    def ask(paths: range) -> None:
        for k in paths:
            sid = cq.get_next_available_stream_id()
            ch.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", HOST.encode()),
                                  (b":path", f"/o{k}".encode())], end_stream=True)

    send(cq, False)
    while flight or answered < len(SIZES):
        timers = [t for t in (cq.get_timer(), sq.get_timer() if sq else None) if t is not None]
        if flight and (not timers or flight[0][0] <= min(timers)):
            now, _, to_client, data = heapq.heappop(flight)
            if to_client:
                writer.writepkt(_frame(SERVER, client, data), ts=now)
                last = now
                cq.receive_datagram(data, SERVER, now=now)
            else:
                if sq is None:
                    header = pull_quic_header(Buffer(data=data), host_cid_length=8)
                    sq = QuicConnection(configuration=sc, original_destination_connection_id=header.destination_cid)
                sq.receive_datagram(data, client, now=now)
        elif timers:
            now = min(timers)
            for conn in (cq, sq):
                if conn is not None and conn.get_timer() is not None and conn.get_timer() <= now:
                    conn.handle_timer(now=now)
        else:
            break
        while sq is not None and (event := sq.next_event()) is not None:
            if isinstance(event, ProtocolNegotiated):
                sh = H3Connection(sq)
            if sh is None:
                continue
            for ev in sh.handle_event(event):
                if isinstance(ev, HeadersReceived):
                    k = int(dict(ev.headers)[b":path"][2:])
                    body = bytes(SIZES[k])
                    sh.send_headers(ev.stream_id, [(b":status", b"200"), (b"content-length", str(len(body)).encode())])
                    sh.send_data(ev.stream_id, body, end_stream=True)
        while (event := cq.next_event()) is not None:
            if isinstance(event, HandshakeCompleted):
                ask(range(0, 1))  # the document first
            for ev in ch.handle_event(event):
                if isinstance(ev, (HeadersReceived, DataReceived)) and ev.stream_ended:
                    answered += 1
                    if not asked:
                        asked = True
                        ask(range(1, len(SIZES)))  # the document is in: the rest at once
        if answered >= len(SIZES) and not closed:
            closed = True
            cq.close()
        send(cq, False)
        if sq is not None:
            send(sq, True)
    return last


def write_capture(out: str, keylog_path: str, pages: int) -> int:
    """``pages`` HTTP/3 page loads, one after the other, each from its own client address, to
    ``out`` (pcap) with their secrets in ``keylog_path``; the number of datagrams written."""
    with tempfile.TemporaryDirectory() as tmp, open(out, "wb") as f, open(keylog_path, "w") as keylog:
        cert, key = _certificate(tmp)
        writer = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB, nano=False)
        t = 1_800_000_000.0
        for i in range(pages):
            client = (str(ipaddress.IPv4Address("10.0.0.2") + (i << 8)), 50_000 + i % 10_000)
            t = _page(writer, client, t, keylog, cert, key) + 1.0  # an idle second between loads
    with open(out, "rb") as f:
        return sum(1 for _ in dpkt.pcap.Reader(f))


if __name__ == "__main__":
    import sys

    print(write_capture(sys.argv[1], sys.argv[2], int(sys.argv[3])))
