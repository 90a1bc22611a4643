#!/bin/sh
# Real TLS 1.3 captures of a HelloRetryRequest and of 0-RTT early data (issue 22), made with
# OpenSSL's s_server / s_client (Debian's openssl 3.0) on the loopback of a network namespace
# of its own (qic-tls): no other traffic. Run as root from this directory:   sh make_hrr_0rtt.sh
#
# * tls13-hrr: the server accepts only the P-384 group (-groups P-384); the client offers
#   X25519 and P-384 but sends a key share for X25519 only (its first group): the server answers
#   with a HelloRetryRequest (RFC 8446 §4.1.4) and the client sends a second ClientHello.
# * tls13-0rtt: a first connection gets a session ticket (-sess_out), a second one resumes it
#   (-sess_in) and sends its request as early data (-early_data, RFC 8446 §4.2.10) before the
#   server's Finished; the key log has its CLIENT_EARLY_TRAFFIC_SECRET.
# * tls13-0rtt-rejected (`sh make_hrr_0rtt.sh rejected` makes only this one): the ticket comes from
#   a server started with -early_data, which is then stopped; a new server (its own ticket keys,
#   without -early_data, with -www) cannot resume the session: it rejects the early data (RFC 8446
#   §4.2.10) and completes a full handshake, after which the client sends the request again
#   (from its standard input) and gets s_server's status page.
# Each request is "GET / HTTP/1.0". For the HRR, s_server -www answers with its status page; s_server
# cannot take -early_data with -www, so for 0-RTT it answers nothing and prints what it received
# ("Early data received:" and the request): the truth of what the early data held.
# Files: <name>.pcap (tcpdump -i lo), <name>.keylog (s_client -keylogfile), <name>.client.txt
# (what s_client printed: "Early data was accepted", the group), <name>.server.txt (s_server's output).
set -eu
NS=qic-tls
PORT=4433
OUT=$(pwd)
TMP=$(mktemp -d)
cleanup() { ip netns pids $NS 2>/dev/null | xargs -r kill 2>/dev/null || true; ip netns del $NS 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
ip netns add $NS
ip netns exec $NS ip link set lo up
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/key.pem" -out "$TMP/cert.pem" \
    -days 2 -subj /CN=www.example.com 2>/dev/null
printf 'GET / HTTP/1.0\r\nHost: www.example.com\r\n\r\n' > "$TMP/req.txt"

run() {  # name, server options, client commands (a shell snippet run in the namespace)
    name=$1; sopts=$2; client=$3
    ip netns exec $NS tcpdump -i lo -s 0 -U --immediate-mode -w "$OUT/$name.pcap" "tcp port $PORT" 2>/dev/null &
    tcpd=$!
    sleep 12 | ip netns exec $NS timeout 15 openssl s_server -accept 127.0.0.1:$PORT -cert "$TMP/cert.pem" \
        -key "$TMP/key.pem" -tls1_3 $sopts > "$OUT/$name.server.txt" 2>&1 &
    srv=$!
    sleep 1
    rm -f "$OUT/$name.keylog"
    ip netns exec $NS sh -c "$client" > "$OUT/$name.client.txt" 2>&1 || true
    sleep 1
    kill $srv 2>/dev/null || true
    kill $tcpd; wait $tcpd 2>/dev/null || true
}

rejected() {  # the ticket from one server, the early data to the next
    name=tls13-0rtt-rejected
    sleep 4 | ip netns exec $NS timeout 6 openssl s_server -accept 127.0.0.1:$PORT -cert "$TMP/cert.pem" \
        -key "$TMP/key.pem" -tls1_3 -early_data -groups X25519 > /dev/null 2>&1 &
    first=$!
    sleep 1
    ip netns exec $NS sh -c "(cat $TMP/req.txt; sleep 1) | timeout 10 openssl s_client -connect 127.0.0.1:$PORT \
        -servername www.example.com -tls1_3 -sess_out $TMP/sess.pem" > /dev/null 2>&1 || true
    kill $first 2>/dev/null || true; wait $first 2>/dev/null || true
    rm -f "$OUT/$name.keylog"
    run $name "-www -groups X25519" \
        "(sleep 1; cat $TMP/req.txt; sleep 1) | timeout 10 openssl s_client -connect 127.0.0.1:$PORT \
         -servername www.example.com -tls1_3 -ign_eof -keylogfile $OUT/$name.keylog -sess_in $TMP/sess.pem \
         -early_data $TMP/req.txt"
    ls -l "$OUT"/$name.*
}
if [ "${1:-}" = rejected ]; then
    rejected
    exit 0
fi

C="timeout 10 openssl s_client -connect 127.0.0.1:$PORT -servername www.example.com -tls1_3"
run tls13-hrr "-www -groups P-384" \
    "$C -ign_eof -groups X25519:P-384 -keylogfile $OUT/tls13-hrr.keylog < $TMP/req.txt"
run tls13-0rtt "-early_data -groups X25519" \
    "(cat $TMP/req.txt; sleep 1) | $C -keylogfile $OUT/tls13-0rtt.keylog -sess_out $TMP/sess.pem; sleep 0.5;
     (sleep 1) | $C -keylogfile $OUT/tls13-0rtt.keylog -sess_in $TMP/sess.pem -early_data $TMP/req.txt"
ls -l "$OUT"/tls13-hrr.* "$OUT"/tls13-0rtt.*
