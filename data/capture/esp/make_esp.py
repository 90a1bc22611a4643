"""Wrap the REAL RTP frames of ../tunnels/inner.pcap in IPsec ESP (RFC 4303).

CRAFTED, not captured: the kernel these samples were made on (6.18, no modules) has no
ESP transform: in a fresh network namespace ``ip xfrm state add ... proto esp ... enc
cipher_null "" auth 'hmac(sha1)' ...`` says "Requested type not found" and ``aead
'rfc4106(gcm(aes))' ...`` says "Requested AEAD algorithm not found" (checked 2026-11-27).
So, as ../tunnels/make_crafted.py does for the tunnels this kernel lacks, the real inner
packets (ffmpeg's PCMU RTP over IPv4, UDP 5004, and over IPv6, UDP 5008, captured by
../tunnels/make_vxlan.sh), each with its original timestamp, are put inside ESP written
here byte by byte from the standards, with the cryptography from ``cryptography``:

======================  =================================================================
file                    what it holds
======================  =================================================================
esp_null_transport.pcap ESP NULL (RFC 2410) in transport mode: IPv4 stream SPI 0x00001001,
                        ICV HMAC-SHA1-96 (12 octets, RFC 2404); IPv6 stream SPI
                        0x00001003, ICV HMAC-SHA-256-128 (16 octets, RFC 4868)
esp_null_tunnel.pcap    ESP NULL in tunnel mode: the IPv4 packets inside outer IPv4
                        10.99.0.1 -> 10.99.0.2 (SPI 0x00001002, HMAC-SHA1-96), the IPv6
                        packets inside outer IPv6 2001:db8::1 -> ::2 (SPI 0x00001004,
                        HMAC-SHA-256-128)
esp_udp.pcap            ESP NULL in UDP (RFC 3948, NAT traversal, as VoWiFi's ePDG tunnels
                        run): outer IPv4 10.99.0.1:4500 -> 10.99.0.2:4500, tunnel mode,
                        SPI 0x00001005, HMAC-SHA1-96; the IPv4 stream only
esp_gcm.pcap            ESP with AES-128-GCM (RFC 4106, 16-octet ICV): IPv4 stream in
                        transport mode (SPI 0x00002001), IPv6 stream in tunnel mode
                        (SPI 0x00002002); its packets cannot be read without the key
======================  =================================================================

ESP packet (RFC 4303 §2): SPI (4), Sequence Number (4), [IV], payload, Padding
(1, 2, 3, ... §2.4), Pad Length, Next Header, ICV. Padding brings Pad Length and Next
Header to a 4-octet boundary (§2.4; NULL and GCM have block size 1, RFC 2410 §2, RFC
4106 §3.2). Next Header: 4 (IPv4) / 41 (IPv6) in tunnel mode, 17 (UDP) in transport mode.

Keys (test keys, kept here so a reader can check the ICVs or decrypt in Wireshark):
HMAC-SHA1 key ``AUTH_KEY_SHA1``, HMAC-SHA-256 key ``AUTH_KEY_SHA256``, AES-GCM key+salt
``GCM_KEY`` + ``GCM_SALT``.

Run: python3 make_esp.py (needs ``cryptography``; reads ../tunnels/inner.pcap).
"""

from __future__ import annotations

import os
import struct
import sys

from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tunnels"))
from make_crafted import V4_A, V4_B, V6_A, V6_B, eth, ipv4, ipv6, read_pcap, udp, write_pcap  # noqa: E402

AUTH_KEY_SHA1 = bytes.fromhex("0123456789abcdef0123456789abcdef01234567")  # 160 bits, RFC 2404 §3
AUTH_KEY_SHA256 = bytes.fromhex("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff")  # RFC 4868 §2.1.1
GCM_KEY = bytes.fromhex("feffe9928665731c6d6a8f9467308308")  # AES-128
GCM_SALT = bytes.fromhex("cafebabe")  # RFC 4106 §4: 4-octet salt from the keying material

MAC_A, MAC_B = bytes.fromhex("020000ee0001"), bytes.fromhex("020000ee0002")
IPPROTO_ESP = 50  # RFC 4303 §2 (IANA)
NH_IPV4, NH_IPV6, NH_UDP = 4, 41, 17


def trailer(plain: bytes, nh: int) -> bytes:
    """Payload + Padding (1, 2, 3, ..., RFC 4303 §2.4) + Pad Length + Next Header, the last
    two ending on a 4-octet boundary."""
    pad = (-(len(plain) + 2)) % 4
    return plain + bytes(range(1, pad + 1)) + bytes([pad, nh])


def esp_null(spi: int, seq: int, plain: bytes, nh: int, sha256: bool) -> bytes:
    """ESP with NULL encryption (RFC 2410 §2: the payload as is), ICV HMAC-SHA1-96
    (RFC 2404 §2: first 96 bits) or HMAC-SHA-256-128 (RFC 4868 §2.3: first 128 bits) over
    the ESP header and payload (RFC 4303 §3.3.2.1)."""
    body = struct.pack("!II", spi, seq) + trailer(plain, nh)
    h = hmac.HMAC(AUTH_KEY_SHA256 if sha256 else AUTH_KEY_SHA1, hashes.SHA256() if sha256 else hashes.SHA1())
    h.update(body)
    return body + h.finalize()[: 16 if sha256 else 12]


def esp_gcm(spi: int, seq: int, plain: bytes, nh: int) -> bytes:
    """ESP with AES-GCM (RFC 4106): 8-octet explicit IV (§3.1, here the sequence number),
    nonce = salt || IV (§4), AAD = SPI || Sequence Number (§5), 16-octet ICV (§6)."""
    head = struct.pack("!II", spi, seq)
    iv = struct.pack("!Q", seq)
    sealed = AESGCM(GCM_KEY).encrypt(GCM_SALT + iv, trailer(plain, nh), head)  # ciphertext || tag
    return head + iv + sealed


def rtp_packets():
    """(ts_sec, ts_usec, ip_packet) of the inner RTP packets to UDP 5004 (IPv4) and 5008 (IPv6)."""
    out = []
    for sec, usec, frame in read_pcap(os.path.join(HERE, "..", "tunnels", "inner.pcap")):
        et = frame[12] << 8 | frame[13]
        ip = frame[14:]
        if et == 0x0800 and ip[9] == NH_UDP and struct.unpack_from("!H", ip, 22)[0] == 5004:
            out.append((sec, usec, ip[: struct.unpack_from("!H", ip, 2)[0]]))
        elif et == 0x86DD and ip[6] == NH_UDP and struct.unpack_from("!H", ip, 42)[0] == 5008:
            out.append((sec, usec, ip[: 40 + struct.unpack_from("!H", ip, 4)[0]]))
    return out


def wrap(ip: bytes, mode: str, spi: int, seq: int, seal) -> bytes:
    """The Ethernet frame carrying ``ip`` protected by ESP (``seal(spi, seq, plain, nh)``)."""
    v6 = ip[0] >> 4 == 6
    if mode == "transport":  # RFC 4303 §3.1.1: ESP after the IP header, the transport inside
        if v6:
            src, dst = ip[8:24], ip[24:40]
            return eth(MAC_B, MAC_A, 0x86DD, ipv6(src, dst, IPPROTO_ESP, seal(spi, seq, ip[40:], NH_UDP)))
        ihl = (ip[0] & 15) * 4
        ident = struct.unpack_from("!H", ip, 4)[0]
        return eth(MAC_B, MAC_A, 0x0800, ipv4(ip[12:16], ip[16:20], IPPROTO_ESP, seal(spi, seq, ip[ihl:], NH_UDP), ident))
    if mode == "udp":  # RFC 3948 §2.1: the ESP header right after a UDP header, port 4500
        return eth(MAC_B, MAC_A, 0x0800, ipv4(V4_A, V4_B, NH_UDP, udp(4500, 4500, seal(spi, seq, ip, NH_IPV4)), seq))
    # tunnel mode, RFC 4303 §3.1.2: the whole inner IP packet inside ESP inside an outer IP
    if v6:
        return eth(MAC_B, MAC_A, 0x86DD, ipv6(V6_A, V6_B, IPPROTO_ESP, seal(spi, seq, ip, NH_IPV6)))
    return eth(MAC_B, MAC_A, 0x0800, ipv4(V4_A, V4_B, IPPROTO_ESP, seal(spi, seq, ip, NH_IPV4), seq))


def build(mode_of, seal_of):
    """Records of every inner packet: ``mode_of(v6)`` its mode, ``seal_of(v6)`` (spi, seal)."""
    seqs: dict[int, int] = {}
    out = []
    for sec, usec, ip in rtp_packets():
        v6 = ip[0] >> 4 == 6
        if mode_of(v6) is None:
            continue
        spi, seal = seal_of(v6)
        seqs[spi] = seqs.get(spi, 0) + 1  # RFC 4303 §2.2: the first packet sent has 1
        out.append((sec, usec, wrap(ip, mode_of(v6), spi, seqs[spi], seal)))
    return out


def main() -> None:
    def null(spi, sha256):
        return spi, lambda s, q, p, nh: esp_null(s, q, p, nh, sha256)

    write_pcap(os.path.join(HERE, "esp_null_transport.pcap"),
               build(lambda v6: "transport", lambda v6: null(0x1003, True) if v6 else null(0x1001, False)))
    write_pcap(os.path.join(HERE, "esp_null_tunnel.pcap"),
               build(lambda v6: "tunnel", lambda v6: null(0x1004, True) if v6 else null(0x1002, False)))
    write_pcap(os.path.join(HERE, "esp_udp.pcap"),
               build(lambda v6: None if v6 else "udp", lambda v6: null(0x1005, False)))
    write_pcap(os.path.join(HERE, "esp_gcm.pcap"),
               build(lambda v6: "tunnel" if v6 else "transport", lambda v6: (0x2002 if v6 else 0x2001, esp_gcm)))


if __name__ == "__main__":
    main()
