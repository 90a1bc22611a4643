#!/usr/bin/env bash
# Make tls13-ech-chromium.pcap and quic-h3-ech-chromium.pcap: Debian's Chromium (browser_load.py,
# Playwright) loading the seed paper's page (data/web/site/) from https://www.example.com/ with
# Encrypted Client Hello (draft-ietf-tls-esni): the name's DNS HTTPS record (RFC 9460) carries
# the server's ECHConfigList (data/web/tools/dns_server.py --https; alpn h2, then h3),
# Chromium resolves it with its own DNS client (browser_load.py --dns) and offers ECH to Go's
# server (ech_pair/ech_pair.go: crypto/tls over TCP, quic-go over QUIC), all on loopback in a
# namespace of its own, captured by tcpdump (DNS and HTTPS). Beside each: Chromium's key log
# (it names the ClientHelloInner's random), its HAR and Navigation/Resource Timing (.har,
# .timing.json), the DNS server's log, and for the TCP one tshark 4.0's decrypted view (nothing).
# Usage (as root; needs go 1.24 or later and its module proxy, chromium, tcpdump, tshark, the
# venv's python with the 'data' extra): data/web/tls/make_ech_browser.sh [PYTHON]
set -euo pipefail
export LC_ALL=C TZ=UTC
HERE=$(cd "$(dirname "$0")" && pwd)
SITE=$(cd "$HERE/../site" && pwd)
PY=${1:-$HERE/../../../.venv/bin/python}
WORK=$(mktemp -d /tmp/wx-echb.XXXXXX)
chmod 755 "$WORK"
NS=wxechb$$
cleanup() {
  ip netns pids $NS 2>/dev/null | xargs -r kill 2>/dev/null || true
  ip netns del $NS 2>/dev/null || true
  rm -rf "/etc/netns/$NS" "$WORK"
}
trap cleanup EXIT
go build -C "$HERE/ech_pair" -o "$WORK/ech_pair" .
ip netns add $NS
ip -n $NS link set lo up
ip -n $NS addr add 198.51.100.2/32 dev lo    # www.example.com
ip -n $NS addr add 198.51.100.53/32 dev lo   # its DNS server
mkdir -p "/etc/netns/$NS"
echo "nameserver 198.51.100.53" >"/etc/netns/$NS/resolv.conf"   # (ip netns exec mounts it on /etc/resolv.conf)
"$WORK/ech_pair" cert "$WORK/cert.pem" "$WORK/key.pem"
"$WORK/ech_pair" keys "$WORK/ech.keys" "$WORK/ech.list"
# the HTTPS record's ech value is the ECHConfigList itself (draft-ietf-tls-svcb-ech)
SPKI=$(openssl x509 -in "$WORK/cert.pem" -pubkey -noout | openssl pkey -pubin -outform der |
  openssl dgst -sha256 -binary | base64)
# tls13-ech-chromium: HTTP/2 over TLS from Go's net/http; quic-h3-ech-chromium: HTTP/3 from
# quic-go (the HTTPS record's alpn h3; --quic makes Chromium take QUIC at once, without offload:
# see make_ech.sh)
for name in tls13-ech-chromium quic-h3-ech-chromium; do
  if [ $name = tls13-ech-chromium ]; then alpn=h2 mode=server quic=(); else alpn=h3 mode=server3 quic=(--quic www.example.com); fi
  ip netns exec $NS timeout 120 python3 "$HERE/../tools/dns_server.py" --bind 198.51.100.53 --alpn $alpn \
    --https "www.example.com=$WORK/ech.list" www.example.com=198.51.100.2 >"$WORK/dns.log" 2>&1 &
  DPID=$!
  ip netns exec $NS env QUIC_GO_DISABLE_GSO=true timeout 120 "$WORK/ech_pair" $mode "$WORK/ech.keys" "$WORK/cert.pem" \
    "$WORK/key.pem" 198.51.100.2:443 "$SITE" >"$WORK/server.log" 2>&1 &
  SPID=$!
  sleep 1
  ip netns exec $NS tcpdump -i lo -s 0 -B 16384 --immediate-mode -w "$WORK/$name.pcap" \
    'tcp port 443 or udp port 443 or udp port 53' 2>/dev/null &
  TPID=$!
  sleep 1
  ip netns exec $NS sh -c "cd '$WORK' && exec '$PY' '$HERE/../browser/browser_load.py' \
    --url https://www.example.com/index.html --out $name --spki '$SPKI' --dns ${quic[*]} --timeout-s 60"
  sleep 1
  kill $TPID; wait $TPID 2>/dev/null || true
  kill $SPID $DPID; wait $SPID $DPID 2>/dev/null || true
  for ext in pcap keylog har timing.json; do cp "$WORK/$name.$ext" "$HERE/$name.$ext"; done
  chmod 644 "$HERE/$name".*
  cp "$WORK/dns.log" "$HERE/$name.dns.log"
  ls -la "$HERE"/$name.*
done
tshark -r "$HERE/tls13-ech-chromium.pcap" -o "tls.keylog_file:$HERE/tls13-ech-chromium.keylog" -q -z http2,tree \
  2>/dev/null >"$HERE/tls13-ech-chromium.tshark-http2-tree.txt"
