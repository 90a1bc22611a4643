#!/usr/bin/env bash
# Make tls13-ech.pcap: a TLS 1.3 connection with Encrypted Client Hello (draft-ietf-tls-esni),
# Go's crypto/tls at both ends (ech_pair/ech_pair.go): the client (192.0.2.2) is given the
# server's ECHConfigList (an X25519 HPKE key, public name public.example.com) and fetches
# /index.html, /style.css and /img1.jpg of the seed paper's page (data/web/site/) over HTTP/2
# from www.example.com (198.51.100.2:443), in a namespace of its own on loopback, captured by
# tcpdump. The ClientHello on the wire is the ClientHelloOuter (SNI public.example.com); the
# client's NSS key log (tls13-ech.keylog) names the ClientHelloInner's random, which is
# encrypted in it. tls13-ech.client.tsv is what the client fetched (path, status, body bytes,
# protocol, ECH accepted); tls13-ech.tshark-http2-tree.txt what tshark 4.0 decrypts with that
# key log (nothing: it looks the key log up by the outer random). Then quic-h3-ech.pcap: the same
# three objects over HTTP/3 (quic-go, Go's crypto/tls QUIC API) with ECH.
# Usage (as root; needs go 1.24 or later and its module proxy for quic-go, tcpdump, tshark):
#   data/web/tls/make_ech.sh
set -euo pipefail
export LC_ALL=C TZ=UTC
HERE=$(cd "$(dirname "$0")" && pwd)
SITE=$(cd "$HERE/../site" && pwd)
WORK=$(mktemp -d /tmp/wx-ech.XXXXXX)
NS=wxech$$
cleanup() { ip netns pids $NS 2>/dev/null | xargs -r kill 2>/dev/null || true; ip netns del $NS 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
go build -C "$HERE/ech_pair" -o "$WORK/ech_pair" .
ip netns add $NS
ip -n $NS link set lo up
ip -n $NS addr add 198.51.100.2/32 dev lo
ip -n $NS addr add 192.0.2.2/32 dev lo
"$WORK/ech_pair" cert "$WORK/cert.pem" "$WORK/key.pem"
"$WORK/ech_pair" keys "$WORK/ech.keys" "$WORK/ech.list"
ip netns exec $NS timeout 30 "$WORK/ech_pair" server "$WORK/ech.keys" "$WORK/cert.pem" "$WORK/key.pem" \
  198.51.100.2:443 "$SITE" >"$WORK/server.log" 2>&1 &
sleep 1
name=tls13-ech
ip netns exec $NS tcpdump -i lo -s 0 --immediate-mode -w "$WORK/$name.pcap" tcp port 443 2>/dev/null &
TPID=$!
sleep 1
rm -f "$HERE/$name.keylog"
echo "198.51.100.2 www.example.com" >"$WORK/hosts"   # (the client's own /etc/hosts, in its mount namespace)
ip netns exec $NS sh -c "mount --bind '$WORK/hosts' /etc/hosts && exec '$WORK/ech_pair' client '$WORK/ech.list' \
  '$WORK/cert.pem' 192.0.2.2 '$HERE/$name.keylog' /index.html /style.css /img1.jpg" >"$HERE/$name.client.tsv"
sleep 1
kill $TPID; wait $TPID 2>/dev/null || true
cp "$WORK/$name.pcap" "$HERE/$name.pcap"
tshark -r "$HERE/$name.pcap" -o "tls.keylog_file:$HERE/$name.keylog" -q -z http2,tree 2>/dev/null \
  >"$HERE/$name.tshark-http2-tree.txt"
ls -la "$HERE"/$name.*

# The same over HTTP/3 (quic-go at both ends, QUIC v1): quic-h3-ech.pcap, with
# QUIC_GO_DISABLE_GSO, and quic-h3-ech-gso.pcap without it: with UDP segmentation offload the
# sender hands the kernel several QUIC packets in one large datagram, and a capture on the
# sending host (loopback here) holds that datagram whole.
for name in quic-h3-ech quic-h3-ech-gso; do
  gso=(env QUIC_GO_DISABLE_GSO=true)
  [ "$name" = quic-h3-ech-gso ] && gso=(env)
  ip netns exec $NS "${gso[@]}" timeout 30 "$WORK/ech_pair" server3 "$WORK/ech.keys" "$WORK/cert.pem" \
    "$WORK/key.pem" 198.51.100.2:443 "$SITE" >"$WORK/server3.log" 2>&1 &
  SPID=$!
  sleep 1
  ip netns exec $NS tcpdump -i lo -s 0 -B 16384 --immediate-mode -w "$WORK/$name.pcap" udp port 443 2>/dev/null &
  TPID=$!
  sleep 1
  rm -f "$HERE/$name.keylog"
  ip netns exec $NS "${gso[@]}" sh -c "mount --bind '$WORK/hosts' /etc/hosts && exec '$WORK/ech_pair' client3 \
    '$WORK/ech.list' '$WORK/cert.pem' '$HERE/$name.keylog' /index.html /style.css /img1.jpg" >"$HERE/$name.client.tsv"
  sleep 1
  kill $TPID; wait $TPID 2>/dev/null || true
  kill $SPID; wait $SPID 2>/dev/null || true
  cp "$WORK/$name.pcap" "$HERE/$name.pcap"
  ls -la "$HERE"/$name.*
done
