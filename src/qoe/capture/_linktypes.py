"""Link-layer header types qoe understands, and the constants their headers use.

References
----------
.. [1] tcpdump.org, "LINK-LAYER HEADER TYPES", https://www.tcpdump.org/linktypes.html
   (the LINKTYPE_ values stored in pcap and pcapng files), and G. Harris,
   M. Richardson, draft-ietf-opsawg-pcaplinktype.
.. [2] tcpdump.org, LINKTYPE_LINUX_SLL (https://www.tcpdump.org/linktypes/LINKTYPE_LINUX_SLL.html)
   and LINKTYPE_LINUX_SLL2 (https://www.tcpdump.org/linktypes/LINKTYPE_LINUX_SLL2.html).
.. [3] tcpdump.org, LINKTYPE_NULL / LINKTYPE_LOOP (https://www.tcpdump.org/linktypes/LINKTYPE_NULL.html).
.. [4] IEEE 802.1Q-2018 §9.5 (C-TAG TPID 0x8100, S-TAG TPID 0x88A8).
.. [5] RFC 2516 §4 (PPPoE session stage, EtherType 0x8864), RFC 1661 §2 and RFC 5072
   §3 (PPP protocol numbers 0x0021 IPv4, 0x0057 IPv6).
.. [6] IEEE 802-2014 §10 (SNAP), RFC 1042 (IP over IEEE 802 networks with LLC/SNAP).
"""

from __future__ import annotations

# LINKTYPE_ values, tcpdump.org linktypes table.
LINKTYPE_NULL = 0  # BSD loopback: 4-byte address family in the writer's byte order
LINKTYPE_ETHERNET = 1  # IEEE 802.3 Ethernet
LINKTYPE_RAW_DLT12 = 12  # DLT_RAW on most BSDs/Linux as written by old libpcap: raw IP
LINKTYPE_RAW_DLT14 = 14  # DLT_RAW on BSD/OS-derived systems as written by old libpcap: raw IP
LINKTYPE_RAW = 101  # raw IP; version from the first nibble
LINKTYPE_LOOP = 108  # OpenBSD loopback: 4-byte address family, network byte order
LINKTYPE_LINUX_SLL = 113  # Linux "cooked" capture v1, 16-byte header
LINKTYPE_IPV4 = 228  # raw IPv4
LINKTYPE_IPV6 = 229  # raw IPv6
LINKTYPE_LINUX_SLL2 = 276  # Linux "cooked" capture v2, 20-byte header

_NAMES = {
    LINKTYPE_NULL: "NULL (BSD loopback)",
    LINKTYPE_ETHERNET: "ETHERNET",
    2: "EXP_ETHERNET",
    3: "AX25",
    6: "IEEE802_5 (Token Ring)",
    7: "ARCNET_BSD",
    8: "SLIP",
    9: "PPP",
    10: "FDDI",
    LINKTYPE_RAW_DLT12: "RAW (DLT 12)",
    LINKTYPE_RAW_DLT14: "RAW (DLT 14)",
    50: "PPP_HDLC",
    51: "PPP_ETHER",
    100: "ATM_RFC1483",
    LINKTYPE_RAW: "RAW",
    104: "C_HDLC",
    105: "IEEE802_11 (Wi-Fi)",
    LINKTYPE_LOOP: "LOOP (OpenBSD loopback)",
    LINKTYPE_LINUX_SLL: "LINUX_SLL",
    117: "PFLOG",
    119: "IEEE802_11_PRISM",
    127: "IEEE802_11_RADIOTAP",
    147: "USER0",
    187: "BLUETOOTH_HCI_H4",
    189: "USB_LINUX",
    195: "IEEE802_15_4_WITHFCS",
    201: "BLUETOOTH_HCI_H4_WITH_PHDR",
    220: "USB_LINUX_MMAPPED",
    LINKTYPE_IPV4: "IPV4",
    LINKTYPE_IPV6: "IPV6",
    249: "USBPCAP",
    253: "NETLINK",
    LINKTYPE_LINUX_SLL2: "LINUX_SLL2",
}

SUPPORTED_LINKTYPES = frozenset(
    {
        LINKTYPE_NULL,
        LINKTYPE_ETHERNET,
        LINKTYPE_RAW_DLT12,
        LINKTYPE_RAW_DLT14,
        LINKTYPE_RAW,
        LINKTYPE_LOOP,
        LINKTYPE_LINUX_SLL,
        LINKTYPE_IPV4,
        LINKTYPE_IPV6,
        LINKTYPE_LINUX_SLL2,
    }
)

# Link layers whose header ends in an EtherType-valued protocol field: link type -> (offset
# of that field, header length). tcpdump.org LINKTYPE_ETHERNET: destination 6, source 6,
# type 2; LINKTYPE_LINUX_SLL: packet type 2, ARPHRD 2, address length 2, address 8,
# protocol 2; LINKTYPE_LINUX_SLL2: protocol 2, reserved 2, ifindex 4, ARPHRD 2, packet
# type 1, address length 1, address 8.
ETHERTYPE_FIELD = {LINKTYPE_ETHERNET: (12, 14), LINKTYPE_LINUX_SLL: (14, 16), LINKTYPE_LINUX_SLL2: (0, 20)}
# Raw IP without a link header: the IP version is the first nibble (LINKTYPE_RAW and the
# old DLT_RAW values), or fixed by the link type (LINKTYPE_IPV4, LINKTYPE_IPV6).
RAW_IP_LINKTYPES = frozenset({LINKTYPE_RAW, LINKTYPE_RAW_DLT12, LINKTYPE_RAW_DLT14})
IP_VERSION_OF_LINKTYPE = {LINKTYPE_IPV4: 4, LINKTYPE_IPV6: 6}

# EtherTypes (IEEE Registration Authority; RFC 894 IPv4, RFC 2464 §3 IPv6).
ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
ETHERTYPE_VLAN = 0x8100  # IEEE 802.1Q C-TAG
ETHERTYPE_QINQ = 0x88A8  # IEEE 802.1ad S-TAG
ETHERTYPE_QINQ_OLD = 0x9100  # pre-802.1ad vendor QinQ TPID (also 0x9200, 0x9300)
VLAN_TPIDS = frozenset({ETHERTYPE_VLAN, ETHERTYPE_QINQ, ETHERTYPE_QINQ_OLD, 0x9200, 0x9300})
ETHERTYPE_PPPOE_SESSION = 0x8864  # RFC 2516 §4
PPP_IPV4 = 0x0021  # RFC 1332 §2 / RFC 1661 §2
PPP_IPV6 = 0x0057  # RFC 5072 §3
ETHER_MAX_LENGTH = 1500  # IEEE 802.3 §3.2.6: Length/Type ≤ 1500 is a length (LLC follows)
LLC_SNAP = b"\xaa\xaa\x03"  # RFC 1042: DSAP=SNAP, SSAP=SNAP, control=UI

# Address families in LINKTYPE_NULL / LINKTYPE_LOOP headers (tcpdump.org LINKTYPE_NULL):
# AF_INET is 2 everywhere; AF_INET6 is 24 (NetBSD, OpenBSD, BSD/OS), 28 (FreeBSD,
# DragonFly), 30 (Darwin/macOS), 10 (Linux), 23 (Windows).
AF_INET = 2
AF_INET6_VALUES = frozenset({10, 23, 24, 28, 30})


def linktype_name(lt: int) -> str:
    """Name of a ``LINKTYPE_`` value from the tcpdump.org table, or ``"unknown"``."""
    return _NAMES.get(lt, "unknown")
