#!/usr/bin/env bash
# Fetch the captures made elsewhere (Michael Driscoll's "The Illustrated TLS 1.2 / TLS 1.3 / QUIC
# Connection", MIT licence, see README.md) at the commits they were taken from, and write what
# tshark 4.0 decrypts from each with its key log (the tests' oracle):
#   illustrated-tls13   TLS 1.3 (TLS_AES_256_GCM_SHA384, OpenSSL), no ALPN; "ping" / "pong"
#   illustrated-tls12   TLS 1.2 over IPv6 (ECDHE-RSA-AES128-CBC-SHA, a CBC suite); "ping" / "pong"
#   illustrated-quic    QUIC v1 (quiche), ALPN "ping/1.0"; "ping" / "pong" on stream 0
# Usage: data/web/external/fetch.sh      Needs: curl, tshark. SKIP_FETCH=1: the oracles only (from the
# files here; they were copied from a clone of the three repositories at these commits, byte for byte).
set -euo pipefail
export LC_ALL=C TZ=UTC
HERE=$(cd "$(dirname "$0")" && pwd)
get() {  # repository, commit, name here
  local base="https://raw.githubusercontent.com/syncsynchalt/$1/$2/captures"
  curl -fsSL "$base/capture.pcap" -o "$HERE/$3.pcap"
  curl -fsSL "$base/keylog.txt" -o "$HERE/$3.keylog"
}
if [ "${SKIP_FETCH:-0}" != 1 ]; then
get illustrated-tls13 ba75259f68a428b9e7cb1113aeb1f6573c6b916f illustrated-tls13
get illustrated-tls12 d22131fa0cbd94bc75fb8fee6a4618d3b5d6b16e illustrated-tls12
get illustrated-quic 554d9b09f3bd95a803a06c175d807e1baece06c6 illustrated-quic
fi
for n in illustrated-tls13 illustrated-tls12; do
  tshark -r "$HERE/$n.pcap" -o "tls.keylog_file:$HERE/$n.keylog" -q -z follow,tls,ascii,0 2>/dev/null \
    > "$HERE/$n.tshark-follow.txt"
done
tshark -r "$HERE/illustrated-quic.pcap" -o "tls.keylog_file:$HERE/illustrated-quic.keylog" -q \
  -z follow,quic,ascii,0,0 2>/dev/null > "$HERE/illustrated-quic.tshark-follow.txt"
