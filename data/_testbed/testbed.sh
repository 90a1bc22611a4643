# Shared testbed shell for data/*/make_samples.sh (sourced, not run): the access-network dumbbell of
# /work/shared/TESTBED.md and the seed paper §5 — client <-> router <-> server in three network
# namespaces, two veth pairs, tbf on the router's two egress interfaces.
#
# The sourcing script sets NSC NSR NSS (its own namespace names, e.g. with $$ in them) before it
# calls anything here, and deletes the namespaces on exit (testbed_down in its trap).
# Optional: TESTBED_CONGCTL (unset = the host default) = a TCP congestion control that the
# client's and the server's default routes carry (`ip route ... congctl NAME`): every TCP
# connection those namespaces open then uses it, also programs that cannot choose one (this
# kernel's default is bbr and net.ipv4.tcp_congestion_control cannot be set inside a namespace).

CLIENT_IP=192.0.2.2 ROUTER_C_IP=192.0.2.1 ROUTER_S_IP=198.51.100.1 SERVER_IP=198.51.100.2
DOWN_RATE=16mbit   # towards the client (seed paper §5: 16 Mbit/s downlink)
UP_RATE=1mbit      # towards the server (seed paper §5: 1 Mbit/s uplink)
FRAME=1514         # full-size Ethernet frame; tbf counts the Ethernet header: limit = N x 1514

in_c() { ip netns exec "$NSC" "$@"; }
in_r() { ip netns exec "$NSR" "$@"; }
in_s() { ip netns exec "$NSS" "$@"; }

testbed_up() {  # $1 = buffer size N in packets (both queues), $2 = bytes (default: tbf limit N x 1514) | packets (pfifo N)
  local n=$1 queue=${2:-bytes} ns
  for ns in "$NSC" "$NSR" "$NSS"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
  # veth ends are created directly in their namespaces (no name clash in the root namespace)
  ip link add c0 netns "$NSC" type veth peer name rc0 netns "$NSR"
  ip link add s0 netns "$NSS" type veth peer name rs0 netns "$NSR"
  ip -n "$NSC" link set c0 gso_max_segs 1 up
  ip -n "$NSS" link set s0 gso_max_segs 1 up
  ip -n "$NSR" link set rc0 gso_max_segs 1 up
  ip -n "$NSR" link set rs0 gso_max_segs 1 up
  ip -n "$NSC" addr add $CLIENT_IP/24 dev c0
  ip -n "$NSR" addr add $ROUTER_C_IP/24 dev rc0
  ip -n "$NSR" addr add $ROUTER_S_IP/24 dev rs0
  ip -n "$NSS" addr add $SERVER_IP/24 dev s0
  ip -n "$NSC" route add default via $ROUTER_C_IP ${TESTBED_CONGCTL:+congctl "$TESTBED_CONGCTL"}
  ip -n "$NSS" route add default via $ROUTER_S_IP ${TESTBED_CONGCTL:+congctl "$TESTBED_CONGCTL"}
  in_r sysctl -qw net.ipv4.ip_forward=1
  in_r tc qdisc add dev rc0 root handle 1: tbf rate $DOWN_RATE burst $((2 * FRAME)) limit $((n * FRAME))
  in_r tc qdisc add dev rs0 root handle 1: tbf rate $UP_RATE burst $((2 * FRAME)) limit $((n * FRAME))
  if [ "$queue" = packets ]; then
    # buffer counted in packets, like the seed paper's router: a pfifo of N packets replaces
    # tbf's own byte fifo (tbf then only shapes)
    in_r tc qdisc add dev rc0 parent 1:1 handle 10: pfifo limit "$n"
    in_r tc qdisc add dev rs0 parent 1:1 handle 10: pfifo limit "$n"
  fi
}

testbed_down() {
  local ns
  for ns in "$NSC" "$NSR" "$NSS"; do ip netns del "$ns" 2>/dev/null || true; done
}

wait_for() {  # wait until file $1 contains text $2 (max 10 s)
  local i
  for i in $(seq 100); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "timeout waiting for '$2' in $1" >&2
  cat "$1" >&2 || true
  return 1
}
