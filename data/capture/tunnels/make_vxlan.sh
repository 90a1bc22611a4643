#!/bin/bash
# Real capture of RTP and HTTP inside VXLAN (RFC 7348), made by this kernel's vxlan driver.
#
# Two network namespaces (tun-a, tun-b) joined by a veth pair (underlay 10.99.0.0/24); a VXLAN
# device (VNI 42, UDP 4789) on each carries 192.168.99.0/24 and fd99::/64. The VXLAN device's
# MTU is 1500 and so, in the end, is the underlay's (the veths get 1550 while the VXLAN devices
# are made: the kernel refuses a VXLAN MTU above the underlay's minus 50), so full-size inner
# frames (+50 bytes of VXLAN/UDP/IP/Ethernet) are fragmented by the OUTER IPv4 layer: real
# outer fragments.
# Traffic, all from tun-a to tun-b:
#   - ffmpeg RTP PCMU 8 kHz, 1 s (IPv4, port 5004)
#   - ffmpeg RTP L16 48 kHz stereo, 0.1 s, pkt_size 2000 (IPv4, port 5006): every RTP packet is
#     larger than the inner MTU, so the INNER IPv4 layer fragments it (inner fragments)
#   - ffmpeg RTP PCMU 8 kHz, 1 s over IPv6 (port 5008)
#   - curl GETs of a 3 kB file from python's http.server, over IPv4 and IPv6
# Captured with tcpdump on tun-b's veth (the OUTER side) -> vxlan.pcap, and on tun-b's VXLAN
# device (the inner Ethernet frames) -> inner.pcap, which make_crafted.py wraps in the
# encapsulations this kernel cannot make (see there).
# Needs root, ffmpeg, tcpdump, curl, python3. Re-run: bash make_vxlan.sh
set -euo pipefail
cd "$(dirname "$0")"
A=tun-a B=tun-b
cleanup() { kill $(jobs -p) 2>/dev/null || true; sleep 0.3; ip netns del $A 2>/dev/null || true; ip netns del $B 2>/dev/null || true; rm -rf "$TMP"; }
TMP=$(mktemp -d)
trap cleanup EXIT
for ns in $A $B; do ip netns add $ns; ip -n $ns link set lo up; done
ip link add va0 netns $A type veth peer name vb0 netns $B
ip -n $A addr add 10.99.0.1/24 dev va0; ip -n $B addr add 10.99.0.2/24 dev vb0
ip -n $A link set va0 up; ip -n $B link set vb0 up
# no segmentation offloads: every frame on the wire is what tcpdump sees
ip netns exec $A ethtool -K va0 tso off gso off gro off 2>/dev/null || true
ip netns exec $B ethtool -K vb0 tso off gso off gro off 2>/dev/null || true
ip -n $A link set va0 mtu 1550 up; ip -n $B link set vb0 mtu 1550 up
ip -n $A link add vx0 type vxlan id 42 remote 10.99.0.2 local 10.99.0.1 dstport 4789 dev va0
ip -n $B link add vx0 type vxlan id 42 remote 10.99.0.1 local 10.99.0.2 dstport 4789 dev vb0
ip -n $A link set vx0 address 02:00:00:00:99:01 mtu 1500 up
ip -n $B link set vx0 address 02:00:00:00:99:02 mtu 1500 up
ip -n $A link set va0 mtu 1500; ip -n $B link set vb0 mtu 1500
ip -n $A addr add 192.168.99.1/24 dev vx0; ip -n $B addr add 192.168.99.2/24 dev vx0
ip -n $A addr add fd99::1/64 dev vx0 nodad; ip -n $B addr add fd99::2/64 dev vx0 nodad
# static neighbours: no ARP/ND in the sample (it stays small); ND would be ignored anyway
ip -n $A neigh add 192.168.99.2 lladdr 02:00:00:00:99:02 dev vx0
ip -n $B neigh add 192.168.99.1 lladdr 02:00:00:00:99:01 dev vx0
ip -n $A neigh add fd99::2 lladdr 02:00:00:00:99:02 dev vx0
ip -n $B neigh add fd99::1 lladdr 02:00:00:00:99:01 dev vx0
sleep 1
head -c 2200 /dev/urandom | base64 -w 76 > "$TMP/file.txt"
ip netns exec $B tcpdump -i vb0 -s 0 -U -w vxlan.pcap 2>"$TMP/td1" &
ip netns exec $B tcpdump -i vx0 -s 0 -U -w inner.pcap 2>"$TMP/td2" &
# UDP sinks so no ICMP port-unreachable comes back
ip netns exec $B python3 -c '
import socket, select
s = []
for fam, host in ((socket.AF_INET, "192.168.99.2"), (socket.AF_INET6, "fd99::2")):
    for p in (5004, 5005, 5006, 5007, 5008, 5009):
        x = socket.socket(fam, socket.SOCK_DGRAM); x.bind((host, p)); s.append(x)
while True:
    for r in select.select(s, [], [])[0]: r.recv(65536)
' &
ip netns exec $B python3 -m http.server 8000 --bind :: --directory "$TMP" >"$TMP/http.log" 2>&1 &  # a job of its own: the trap kills it
sleep 1.5
ip netns exec $A ffmpeg -nostdin -loglevel error -re -f lavfi -i sine=frequency=440:duration=1 \
  -ar 8000 -ac 1 -c:a pcm_mulaw -f rtp rtp://192.168.99.2:5004
ip netns exec $A ffmpeg -nostdin -loglevel error -re -f lavfi -i sine=frequency=660:duration=0.1 \
  -ar 48000 -ac 2 -c:a pcm_s16be -f rtp "rtp://192.168.99.2:5006?pkt_size=2000"
ip netns exec $A ffmpeg -nostdin -loglevel error -re -f lavfi -i sine=frequency=880:duration=1 \
  -ar 8000 -ac 1 -c:a pcm_mulaw -f rtp "rtp://[fd99::2]:5008"
ip netns exec $A curl -s -o /dev/null http://192.168.99.2:8000/file.txt
ip netns exec $A curl -s -o /dev/null "http://[fd99::2]:8000/file.txt"
sleep 1
