# tests/netns.bash - hosts on one machine: N network namespaces on a hub
#
# netns_setup N makes N namespaces, "hosts" 1..N, each with one interface
# eth0 at $NETNS_NET.<i>/24 (default 10.77.0.<i>), joined by veth pairs to
# a bridge in a hub namespace.  Every link lives inside the namespaces the
# harness made (the veth pairs are created in the hub with their other end
# sent straight into a host), so nothing is added to the namespace the
# test runs in, and deleting the namespaces deletes every link.
#
#   load netns
#   netns_require            # skip (bats) unless root with `ip netns`
#   netns_setup 3            # hosts 1..3 at 10.77.0.1..3
#   netns_exec 2 curl http://$(netns_addr 1):8000/
#   netns_link 1 "rate 100mbit delay 10ms loss 0.1%"   # a slow link
#   netns_cut 3; netns_heal 3   # host 3's link down, and up again
#   netns_teardown           # in teardown(): processes, namespaces, links
#
# Names: "spt<pid>x<i>" and "spt<pid>xh" (hub), with the pid of the shell
# that made them, so parallel tests never collide.  Teardown kills every
# process inside each namespace (`ip netns pids`), then deletes the
# namespaces; it runs from the caller's teardown, from a trap on INT/TERM
# (set by netns_setup; it then re-raises the signal), and, if the test
# process is killed with SIGKILL and runs no trap at all, from a reaper
# started by netns_setup that waits for the owner to exit.  Every wait is
# bounded.
#
# Where namespaces are used by a process that is not the test shell (a
# script started by the test), NETNS_OWNER names that process instead.
#
# The wire: where the kernel has no netem (CONFIG_NET_SCH_NETEM unset:
# nothing in it delays or loses packets on purpose), the hosts are not
# joined by a bridge but by tests/wire (tests/wire.c), a learning switch
# in user space run in the hub namespace: one TAP device a host, moved
# into the host's namespace as its eth0, every frame between hosts
# through it, shaped per link as netns_link asks (rate, delay, loss), so
# that netns_link means the same with or without netem.  It is asked
# for: NETNS_WIRE=auto takes the wire where netem is missing (the tests
# and benches that shape delays or losses), NETNS_WIRE=1 even where
# netem is; unset or 0, the bridge (netns_link refuses a delay or a
# loss without netem): every frame through a process costs CPU that the
# many namespace tests that shape nothing, or only the rate (a tbf),
# need not pay.  NETNS_WIRE_SEED seeds its losses (default 1).
# Its control FIFO and state are in /run/spirt-netns/<prefix>w/
# (netns_wire, netns_shape); it runs in the hub, so the teardown, the
# trap and the reaper kill it with everything else there, and it also
# ends when the shell that ran netns_setup dies (PR_SET_PDEATHSIG): so
# call netns_setup in the shell that lives as long as the hosts, not in
# a $(...) or a pipeline.  Every frame crosses a process: at 1500 bytes
# a frame it is CPU (about 2 syscalls a frame), which a loaded machine
# shares with the peers: tests/53-netns-train took 26 s on the wire
# against 20 on the bridge (one run each, load 6 to 10), and 8 peers all
# to all kept the wire at a third of a CPU (docs/scale.md, the race).
#
# The test range is a blackhole in the namespace the harness runs in:
# the root namespace of a machine may route $NETNS_NET.0/24 to a real
# network (10.0.0.0/8 or a default route), so a command run outside the
# namespaces by mistake would send traffic off the machine.  While a
# harness is set up, `ip route replace blackhole $NETNS_NET.0/24` holds
# in the caller's namespace: a connect there fails at once with a local
# error (EINVAL, "Invalid argument"), nothing leaves.  Harnesses on one range share the route (bats
# files run in parallel, benches beside tests, other trees' tests): each
# registers its prefix in /run/spirt-netns/ under flock(1) on
# /run/spirt-netns/lock, and the one that removes the last live
# registration removes the route (a registration whose owner process and
# hub namespace are both gone is stale and dropped).  netns_clean removes
# the registration, so the teardown, the trap and the reaper all remove
# the route.  A range with an address or a route of its own in the
# caller's namespace (a real network) is refused: netns_require skips,
# netns_setup fails; the harness never takes it over.

NETNS_NET=${NETNS_NET:-10.77.0}
# the link emulator (tests/wire.c, built by make all) beside this file
NETNS_WIREBIN=${NETNS_WIREBIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")" &&
	pwd)/wire}
NETNS_PREFIX=
NETNS_N=0
NETNS_REAPER=

# netns_require: skip the test unless namespaces can be made here
netns_require() {
	[ "$(id -u)" -eq 0 ] || skip "network namespaces need root"
	command -v ip >/dev/null 2>&1 || skip "no ip (Debian package iproute2)"
	local probe="spt$$probe$RANDOM"
	ip netns add "$probe" 2>/dev/null ||
		skip "ip netns add fails here (no CAP_SYS_ADMIN/NET_ADMIN?)"
	# (entering one, as ip -n and ip netns exec do, remounts / rslave,
	# which fails where / is not a mount point, as in a bare chroot)
	if ! ip -n "$probe" link set lo up 2>/dev/null; then
		ip netns del "$probe" 2>/dev/null || :
		skip "ip netns cannot enter a namespace here (is / a mount point?)"
	fi
	ip netns del "$probe" 2>/dev/null || :
	command -v flock >/dev/null 2>&1 ||
		skip "no flock (Debian package util-linux)"
	local why
	if why=$(netns_taken "$NETNS_NET"); then
		skip "$NETNS_NET.0/24 is in use in this namespace ($why)"
	fi
}

# netns_taken NET: whether NET.0/24 is someone's network in the caller's
# namespace: prints the first address or route inside it (other than the
# harness's own blackhole route) and returns 0; 1 if it is free
netns_taken() {
	local r
	r=$({
		ip -4 -o addr show to "$1.0/24"
		ip -4 route show table all root "$1.0/24" |
		    awk -v n="$1.0/24" '!($1 == "blackhole" && $2 == n &&
			NF == 2)'
	} 2>/dev/null | head -n 1)
	[ -n "$r" ] || return 1
	printf '%s\n' "$r" | awk '{ $1 = $1; print }'
}

# netns_route PREFIX NET: register PREFIX as a user of NET.0/24 and make
# the range a blackhole in the caller's namespace; 1 with a message if
# the range is someone's network here
netns_route() {
	local d=/run/spirt-netns
	mkdir -p "$d" || return 1
	(
		local why
		flock -w 10 9 || { echo "netns: $d/lock: busy" >&2; exit 1; }
		if why=$(netns_taken "$2"); then
			printf 'netns: %s.0/24 is in use in this namespace (%s): %s\n' \
			    "$2" "$why" "not taking it over" >&2
			exit 1
		fi
		echo "$2" >"$d/$1" && ip route replace blackhole "$2.0/24"
	) 9>>"$d/lock"
}

# netns_unroute PREFIX: drop PREFIX's registration; remove its range's
# blackhole route unless another live harness still holds the range.
# A standalone function of its argument, for the reaper.
netns_unroute() {
	local d=/run/spirt-netns
	[ -e "$d/$1" ] || return 0
	(
		local net f o pid
		flock -w 10 9 || exit 1
		net=$(cat "$d/$1") && rm -f "$d/$1" || exit 1
		for f in "$d"/spt*x; do
			[ "$(cat "$f" 2>/dev/null)" = "$net" ] || continue
			o=${f##*/}
			pid=${o#spt}
			pid=${pid%x}
			# a live owner, or its namespaces: it still needs it
			if kill -0 "$pid" 2>/dev/null ||
			    [ -e "/run/netns/${o}h" ]; then
				exit 0
			fi
			rm -f "$f"
		done
		ip route del blackhole "$net.0/24" 2>/dev/null || :
	) 9>>"$d/lock"
}

# netns_name I: the namespace of host I ("h": the hub)
netns_name() {
	printf '%s%s\n' "$NETNS_PREFIX" "$1"
}

# netns_addr I: host I's address
netns_addr() {
	printf '%s.%s\n' "$NETNS_NET" "$1"
}

# netns_exec I CMD...: run CMD in host I's namespace
netns_exec() {
	local i=$1
	shift
	ip netns exec "$NETNS_PREFIX$i" "$@"
}

# netns_clean PREFIX N: kill what runs in, and delete, every namespace
# named PREFIX1..PREFIXN and PREFIXh, then its range's route
# (netns_unroute).  A standalone function of its arguments only, so that
# the reaper can run it after its owner died.
netns_clean() {
	local p=$1 n=$2 i ns pids try
	for i in $(seq 1 "$n") h; do
		ns=$p$i
		[ -e "/run/netns/$ns" ] || continue
		for try in 1 2 3 4 5 6 7 8 9 10; do
			pids=$(ip netns pids "$ns" 2>/dev/null)
			[ -n "$pids" ] || break
			# shellcheck disable=SC2086
			kill -KILL $pids 2>/dev/null || :
			sleep 0.1
		done
		ip netns del "$ns" 2>/dev/null || :
	done
	rm -rf "/run/spirt-netns/${p}w"
	netns_unroute "$p"
}

# netns_setup N: make hosts 1..N and the hub; 0, or 1 with a message
netns_setup() {
	local n=$1 i k ns hub owner=${NETNS_OWNER:-$BASHPID}
	NETNS_PREFIX="spt${owner}x"
	NETNS_N=$n
	hub=$NETNS_PREFIX"h"
	trap 'netns_teardown; trap - INT; kill -INT $BASHPID' INT
	trap 'netns_teardown; trap - TERM; kill -TERM $BASHPID' TERM
	# the reaper: outlives a SIGKILLed owner, then cleans; setsid and no
	# inherited fds, so it holds no pipe of bats open
	setsid bash -c "$(declare -f netns_clean netns_unroute)"'
		tail --pid="$1" -f /dev/null
		netns_clean "$2" "$3"' reaper "$owner" "$NETNS_PREFIX" "$n" \
	    </dev/null >/dev/null 2>&1 &
	NETNS_REAPER=$!
	netns_route "$NETNS_PREFIX" "$NETNS_NET" || return 1
	ip netns add "$hub" || { echo "netns: cannot add $hub" >&2; return 1; }
	ip -n "$hub" link set lo up || return 1
	local wire=0 why
	case ${NETNS_WIRE:-0} in
	1) wire=1 ;;
	auto) why=$(netns_netem) || wire=1 ;;
	esac
	if [ "$wire" = 1 ]; then
		netns_wire_start "$n" || return 1
	else
		ip -n "$hub" link add br0 type bridge &&
		    ip -n "$hub" link set br0 up || return 1
	fi
	for i in $(seq 1 "$n"); do
		ns=$NETNS_PREFIX$i
		ip netns add "$ns" || return 1
		if [ "$wire" = 1 ]; then
			# the TAP the wire holds becomes the host's eth0
			ip -n "$hub" link set "t$i" netns "$ns" &&
			    ip -n "$ns" link set "t$i" name eth0
		else
			ip -n "$hub" link add "v$i" type veth peer name eth0 \
			    netns "$ns" &&
			    ip -n "$hub" link set "v$i" master br0 &&
			    ip -n "$hub" link set "v$i" up
		fi &&
		    ip -n "$ns" link set lo up &&
		    ip -n "$ns" addr add "$(netns_addr "$i")/24" dev eth0 &&
		    ip -n "$ns" link set eth0 up || {
			echo "netns: cannot wire $ns" >&2
			return 1
		}
	done
	# bounded: every host's eth0 is up (no STP on br0: ports forward
	# at once; a TAP is up while the wire holds it)
	for i in $(seq 1 "$n"); do
		for k in $(seq 1 100); do
			ip -n "$NETNS_PREFIX$i" -o link show eth0 2>/dev/null |
			    grep -Eq 'state UP|[<,]LOWER_UP[,>]' && break
			sleep 0.1
		done
		ip -n "$NETNS_PREFIX$i" -o link show eth0 |
		    grep -Eq 'state UP|[<,]LOWER_UP[,>]' ||
			{ echo "netns: eth0 of host $i is not up" >&2; return 1; }
	done
}

# netns_wire_start N: the wire in the hub with TAPs t1..tN, ready for
# commands; 0, or 1 with a message (its stderr is in its directory's log)
netns_wire_start() {
	local n=$1 w=/run/spirt-netns/${NETNS_PREFIX}w i k taps=
	[ -x "$NETNS_WIREBIN" ] || {
		echo "netns: no $NETNS_WIREBIN (make all builds it)" >&2
		return 1
	}
	rm -rf "$w" && mkdir -p "$w" || return 1
	for i in $(seq 1 "$n"); do
		taps="$taps t$i"
	done
	# (no fd of the caller's held: bats waits for its pipes to close;
	# disowned: a `wait` for the test's own jobs does not wait for it)
	# (nice -10: on a loaded machine the frames wait for the wire's
	# turn on a CPU, a delay no link asked for; nice execs the wire, so
	# its parent is still this shell)
	# shellcheck disable=SC2086
	ip netns exec "${NETNS_PREFIX}h" nice -n -10 "$NETNS_WIREBIN" \
	    -s "${NETNS_WIRE_SEED:-1}" "$w" $taps </dev/null >/dev/null \
	    2>"$w/log" 3>&- &
	k=$!
	disown "$k" 2>/dev/null || :
	for i in $(seq 1 200); do
		[ -e "$w/state" ] && return 0
		kill -0 "$k" 2>/dev/null || break
		sleep 0.05
	done
	echo "netns: the wire did not start: $(tail -n 1 "$w/log" 2>/dev/null)" >&2
	return 1
}

# netns_wired: whether the hosts are joined by the wire (0) or a bridge
netns_wired() {
	[ -n "$NETNS_PREFIX" ] && [ -p "/run/spirt-netns/${NETNS_PREFIX}w/ctl" ]
}

# netns_wire CMD...: a command to the wire (tests/wire.c: "I SPEC" or
# "stat"); 0 once it is done, 1 with a message if it is refused or not
# done within 5 s
netns_wire() {
	local w=/run/spirt-netns/${NETNS_PREFIX}w tok k
	tok=$BASHPID.$RANDOM$RANDOM
	# (<>: opening the FIFO so never blocks, the wire gone or not)
	printf '%s %s\n' "$tok" "$*" 1<>"$w/ctl" || return 1
	for k in $(seq 1 500); do
		case " $(head -n 1 "$w/state" 2>/dev/null) " in
		*" $tok:ok "*) return 0 ;;
		*" $tok:bad "*)
			echo "netns: the wire: $(tail -n 1 "$w/log")" >&2
			return 1 ;;
		esac
		sleep 0.01
	done
	echo "netns: the wire does not answer ($w)" >&2
	return 1
}

# netns_cut I, netns_heal I: host I's link down (nothing in or out; its
# eth0 without carrier) and up again: the hub's end of its veth set down
# and up, or on the wire the same by the wire
netns_cut() {
	if netns_wired; then
		netns_wire "$1" down
	else
		ip -n "${NETNS_PREFIX}h" link set "v$1" down
	fi
}
netns_heal() {
	if netns_wired; then
		netns_wire "$1" up
	else
		ip -n "${NETNS_PREFIX}h" link set "v$1" up
	fi
}

# netns_shape I: host I's link as shaped now: the wire's line for it
# ("I rate R delay D loss P% limit N in F out F lost F dropped F bytes
# IN OUT": frames from the host, to it, lost by the loss, dropped by a
# full queue, and the bytes from and to the host), or the qdiscs tc
# shows on both its ends
netns_shape() {
	if netns_wired; then
		netns_wire stat &&
		    awk -v i="$1" '$1 == i' \
		    "/run/spirt-netns/${NETNS_PREFIX}w/state"
		return
	fi
	tc -n "${NETNS_PREFIX}h" qdisc show dev "v$1" &&
	    tc -n "$NETNS_PREFIX$1" qdisc show dev eth0
}

# netns_teardown: kill, delete, forget; safe to call twice or before setup
netns_teardown() {
	[ -n "$NETNS_PREFIX" ] || return 0
	netns_clean "$NETNS_PREFIX" "$NETNS_N"
	if [ -n "$NETNS_REAPER" ]; then
		local t
		t=$(pgrep -P "$NETNS_REAPER" 2>/dev/null)
		# shellcheck disable=SC2086
		kill -KILL "$NETNS_REAPER" $t 2>/dev/null || :
		# reaped quietly (no "Killed" line) where it is our child
		wait "$NETNS_REAPER" 2>/dev/null || :
	fi
	NETNS_PREFIX= NETNS_N=0 NETNS_REAPER=
}

# netns_left PREFIX: the namespaces still named PREFIX* (empty: all gone)
netns_left() {
	ip netns list 2>/dev/null | awk -v p="$1" 'index($1, p) == 1 { print $1 }'
}

# netns_wait_port I PORT: wait (at most 10 s) for a listener on host I
netns_wait_port() {
	local k
	for k in $(seq 1 100); do
		netns_exec "$1" ss -Hltn "sport = :$2" 2>/dev/null | grep -q . &&
			return 0
		sleep 0.1
	done
	echo "netns: nothing listens on port $2 of host $1" >&2
	return 1
}

# netns_netem: whether this kernel has the netem qdisc (sch_netem,
# CONFIG_NET_SCH_NETEM): 0, or 1 with the reason on stdout.  Probed in a
# namespace of its own, on a veth pair made there.
netns_netem() {
	local p="spt$$netem$RANDOM" r=0 e
	ip netns add "$p" 2>/dev/null || { echo "ip netns add fails"; return 1; }
	if ! ip -n "$p" link add t0 type veth peer name t1 2>/dev/null; then
		echo "cannot make a veth pair"
		r=1
	elif ! e=$(tc -n "$p" qdisc add dev t0 root netem delay 1ms 2>&1)
	then
		echo "tc qdisc ... netem: $e (this kernel has no sch_netem, CONFIG_NET_SCH_NETEM)"
		r=1
	fi
	ip netns del "$p" 2>/dev/null || :
	return "$r"
}

# netns_link I SPEC: shape host I's link to the hub, SPEC a netem(8)
# subset: "rate R", "delay D", "loss P%" in any order, e.g. "rate
# 100mbit delay 10ms loss 0.1%".  Where it applies, so that RTT is what
# SPEC says: the delay and the loss on the hub's end of the link only
# (v<I>, what goes to host I), the rate on both ends (host I's eth0 too,
# what host I sends).  So between two hosts each shaped with "delay D",
# every packet waits D once (at its receiver's link), a round trip 2 D:
# "delay 10ms" is a 20 ms RTT; "loss P%" loses P% a direction; each host
# sends and receives at most R.  Without delay or loss, the rate alone
# is a tbf(8) where the kernel has no netem and the hosts are on a
# bridge (NETNS_WIRE unset or 0); delay or loss there: 1 with the reason
# (netns_netem).  On the wire (tests/wire.c) the same, by the wire: the
# delay and the loss on what goes to host I, the rate both ways, and a
# queue of at most 1000 frames each way (netem's default limit).  "none"
# removes the shaping.  Rates as tc
# writes them (kbit, mbit, gbit).
netns_link() {
	local i=$1 hub="${NETNS_PREFIX}h" host="$NETNS_PREFIX$1" rate= rest=
	local why
	# shellcheck disable=SC2086
	set -- $2
	if [ "$1" = none ]; then
		if netns_wired; then
			netns_wire "$i" none
			return
		fi
		tc -n "$hub" qdisc del dev "v$i" root 2>/dev/null || :
		tc -n "$host" qdisc del dev eth0 root 2>/dev/null || :
		return 0
	fi
	while [ $# -gt 0 ]; do
		case $1 in
		rate) rate=$2 ;;
		delay | loss) rest="$rest $1 $2" ;;
		*) echo "netns_link: $1: rate, delay or loss" >&2; return 1 ;;
		esac
		[ $# -ge 2 ] || { echo "netns_link: $1: no value" >&2; return 1; }
		shift 2
	done
	if netns_wired; then
		netns_wire "$i" ${rate:+rate $rate}$rest
		return
	fi
	if why=$(netns_netem); then
		# shellcheck disable=SC2086
		tc -n "$hub" qdisc replace dev "v$i" root netem \
		    ${rate:+rate $rate} $rest &&
		    if [ -n "$rate" ]; then
			tc -n "$host" qdisc replace dev eth0 root netem \
			    rate "$rate"
		    fi
		return
	fi
	if [ -n "$rest" ]; then
		echo "netns_link: host $i:$rest: $why" >&2
		return 1
	fi
	[ -n "$rate" ] || return 0
	netns_tbf "$hub" "v$i" "$rate" && netns_tbf "$host" eth0 "$rate"
}

# netns_tbf NS DEV RATE: a token bucket of RATE on DEV's egress, a burst
# of 1 ms at that rate (at least 16 KiB), a queue of at most 50 ms
netns_tbf() {
	local bps
	bps=$(awk -v r="$3" 'BEGIN {
		n = r + 0; u = tolower(substr(r, length(n "") + 1))
		m = -1
		if (u == "gbit") m = 1e9
		if (u == "mbit") m = 1e6
		if (u == "kbit") m = 1e3
		if (u == "bit" || u == "") m = 1
		if (n <= 0 || m < 0) exit 1
		print n * m }') || {
		echo "netns_link: rate $3: a number and bit, kbit, mbit or gbit" >&2
		return 1
	}
	tc -n "$1" qdisc replace dev "$2" root tbf rate "$3" \
	    burst "$(awk -v b="$bps" 'BEGIN { x = int(b / 8 / 1000)
		print (x < 16384 ? 16384 : x) }')" latency 50ms
}

# netns_peers N PORT: a group key (group.key, group.pub) and members
# p1..pN of run r1 (pI.key, pI.hex, pI.tok), and a peers file naming
# each pI by host I's address and PORT
netns_peers() {
	local i
	spirt-peer keygen -p group.pub group.key >/dev/null || return 1
	: >peers
	for i in $(seq "$1"); do
		spirt-peer keygen "p$i.key" >"p$i.hex" &&
		spirt-peer invite -o "p$i.tok" -g group.key -i "p$i" -r r1 \
		    "$(cat "p$i.hex")" || return 1
		echo "p$i http://$(netns_addr "$i"):$2" >>peers
	done
}
