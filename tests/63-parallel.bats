#!/usr/bin/env bats
# 63-parallel: GNU parallel fans spirt-grad functions out over ssh to three
# "hosts" (network namespaces, each running its own sshd with host keys and
# an authorized key made here), with --sshlogin, --retries and --joblog.
# The functions reach the peer's store through its URL with a function's
# credentials; the peer (host 1) aggregates and updates.  The training is
# spirt-train --cold's, with SPIRT_FANOUT in place of xargs, and gives the
# model bytes xargs gives.  Root only; bounded; nothing under /root/.ssh
# or /etc/ssh is read or written (the test's own sshd_config, keys and
# known_hosts live in its tmpdir); sshd needs its privilege separation
# directory /run/sshd, which is made if missing, as the package's init
# script does.

load helper
load netns

PORT=7070
SSHPORT=2222
STEPS=4

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	export SPIRT_STORE="$BATS_TEST_TMPDIR/spirt.db"
	unset SPIRT_MAPSIZE SPIRT_MAPSIZE_MAX SPIRT_FANOUT
	# parallel keeps its files in $PARALLEL_HOME (default ~/.parallel)
	export PARALLEL_HOME="$BATS_TEST_TMPDIR/parallel"
}

teardown() {
	netns_teardown
	return 0
}

need() {
	netns_require
	command -v parallel >/dev/null || skip "no parallel (Debian package parallel)"
	[ -x /usr/sbin/sshd ] || skip "no sshd (Debian package openssh-server)"
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
}

# sshd_start I [PATHDIRS]: host I's sshd on its address, port SSHPORT,
# root's key only; PATHDIRS, then the tools, first in its sessions' PATH
sshd_start() {
	local i=$1 d=$PWD/ssh/h$1
	mkdir -p "$d"
	ssh-keygen -q -t ed25519 -N '' -C "h$i" -f "$d/host_key"
	cat >"$d/sshd_config" <<-EOF
	ListenAddress $(netns_addr "$i"):$SSHPORT
	HostKey $d/host_key
	PidFile $d/sshd.pid
	AuthorizedKeysFile $PWD/ssh/authorized_keys
	PermitRootLogin prohibit-password
	PasswordAuthentication no
	KbdInteractiveAuthentication no
	UsePAM no
	# (the test's tmpdir lies under /tmp, which is world-writable)
	StrictModes no
	SetEnv PATH=${2:+$2:}$SPIRT_ROOT:/usr/bin:/bin
	EOF
	/usr/sbin/sshd -t -f "$d/sshd_config"
	# (-D: in the foreground, a process of the namespace, so teardown
	# ends it; an absolute path, as sshd re-executes itself)
	netns_exec "$i" /usr/sbin/sshd -D -f "$d/sshd_config" -E "$d/log" &
	printf '[%s]:%s %s\n' "$(netns_addr "$i")" $SSHPORT \
	    "$(cat "$d/host_key.pub")" >>ssh/known_hosts
}

# ssh_setup: root's key, the client's config; ssh as $SSH, as parallel
# runs it (PARALLEL_SSH)
ssh_setup() {
	[ -d /run/sshd ] || mkdir -m 755 /run/sshd
	mkdir -p ssh
	ssh-keygen -q -t ed25519 -N '' -C driver -f ssh/id
	cp ssh/id.pub ssh/authorized_keys
	cat >ssh/config <<-EOF
	Host *
	    Port $SSHPORT
	    User root
	    IdentityFile $PWD/ssh/id
	    IdentitiesOnly yes
	    UserKnownHostsFile $PWD/ssh/known_hosts
	    GlobalKnownHostsFile /dev/null
	    StrictHostKeyChecking yes
	    BatchMode yes
	    ConnectTimeout 10
	EOF
	SSH="ssh -F $PWD/ssh/config"
}

# serve STORE: peer p1 serves STORE on host 1 for the functions; its URL
# in URL, its pid in SRV (ip netns exec and env exec it)
serve() {
	mkfifo ready
	ip netns exec "$(netns_name 1)" env SPIRT_KEY="$PWD/p1.key" SPIRT_TOKEN="$PWD/p1.tok" \
	    SPIRT_GROUP="$PWD/group.pub" spirt-peer serve -s "$PWD/$1" \
	    -l "$(netns_addr 1):$PORT" -F 3 3>ready 2>serve.log &
	SRV=$!
	read -r -t 60 addr <ready
	URL=http://$addr
}

# the data, sharded for 3 functions, and the test set
base() {
	spirt-shard -s base -q -n 3 --seed 1 \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz"
	spirt-shard -s base -q -d test "$FMNIST/t10k-images-idx3-ubyte.gz" \
	    "$FMNIST/t10k-labels-idx1-ubyte.gz"
}

# the function's command prefix on a host: its store and credentials
# and the OpenBLAS kernels of this machine's environment, where it names
# them: the reference's bits are theirs, and ssh passes no environment
# (the machines of CI set OPENBLAS_CORETYPE on some CPUs)
fn_env() {
	local v
	printf 'env SPIRT_STORE=%s SPIRT_KEY=%s SPIRT_TOKEN=%s SPIRT_GROUP=%s' \
	    "$URL" "$PWD/f1.key" "$PWD/f1.tok" "$PWD/group.pub"
	for v in OPENBLAS_CORETYPE OPENBLAS_L2_SIZE; do
		[ -z "${!v-}" ] || printf ' %s=%s' "$v" "${!v}"
	done
}

# hosts_up: hosts 2..4 with sshd (host 3 flaky: the first function it
# runs fails with 75, as one whose process is killed, and says which in
# flaky/failed), host 1 serving store s1 to them, the data in base, ref
# and s1; HOSTS the sshlogins
hosts_up() {
	need
	netns_setup 4
	ssh_setup
	group_keys
	base
	cp -r base ref
	cp -r base s1
	mkdir flaky
	cat >flaky/spirt-grad <<-EOF
	#!/bin/sh
	if mkdir "$PWD/flaky/lock" 2>/dev/null; then
		echo "\$*" >"$PWD/flaky/failed"
		echo "host 3: this function fails once" >&2
		exit 75
	fi
	exec "$SPIRT_ROOT/spirt-grad" "\$@"
	EOF
	chmod +x flaky/spirt-grad
	sshd_start 2
	sshd_start 3 "$PWD/flaky"
	sshd_start 4
	for i in 2 3 4; do
		netns_wait_port "$i" $SSHPORT
	done
	serve s1
	HOSTS=$(netns_addr 2),$(netns_addr 3),$(netns_addr 4)
}

# fan [PARALLEL-OPTIONS]: SPIRT_FANOUT for the hosts: a job slot per
# host, every job's outcome appended to the joblog, the function's store
# and credentials on the remote command line
fan() {
	printf 'parallel --will-cite -j 1 -I{} --sshlogin %s --joblog +%s %s %s' \
	    "$HOSTS" "$PWD/jobs" "$*" "$(fn_env)"
}

# on_hosts CMD...: CMD on host 1 with the fan-out's environment
on_hosts() {
	netns_exec 1 env PARALLEL_SSH="$SSH" timeout 300 "$@"
}

# same_model: store s1's model and optimiser state at STEPS are ref's,
# byte for byte, and the logs record the same evaluations (time aside)
same_model() {
	local k
	for k in model/mlp@$STEPS opt/mlp@$STEPS; do
		[ "$(spirt-store -s ref get "$k" | md5sum)" = \
		  "$(spirt-store -s s1 get "$k" | md5sum)" ]
	done
	diff <(cut -f2- ref.train-mlp.tsv) <(cut -f2- s1.train-mlp.tsv)
}

# jobs_ok: every function of every step succeeded, once, and each host
# ran some
jobs_ok() {
	local i
	run -0 awk -F'\t' '$1 != "Seq" && $7 == 0 { print $9 }' jobs
	[ "${#lines[@]}" -eq $((3 * STEPS)) ]
	[ "$(printf '%s\n' "${lines[@]}" | sort -u | wc -l)" -eq $((3 * STEPS)) ]
	for i in 2 3 4; do
		awk -F'\t' -v h="$(netns_addr $i)" '$2 == h && $7 == 0' jobs |
		    grep -q .
	done
}

@test "parallel over ssh: functions on three hosts, --retries past a host that fails once, the model bytes of xargs" {
	hosts_up
	# the reference: the same training with xargs, on this machine
	run -0 spirt-train -q --cold -n 3 -b 16 --steps $STEPS -s ref

	run -0 on_hosts env SPIRT_FANOUT="$(fan --retries 2)" \
	    spirt-train -q --cold -n 3 -b 16 --steps $STEPS -s s1
	jobs_ok
	# host 3 failed a function; parallel ran it again on another host
	# (the joblog has each job's last attempt)
	[ -s flaky/failed ]
	run -0 awk -F'\t' -v c="$(fn_env) spirt-grad $(cat flaky/failed)" \
	    '$9 == c && $7 == 0 { print $2 }' jobs
	[ "${#lines[@]}" -eq 1 ] && [ "$output" != "$(netns_addr 3)" ]
	same_model
	# the functions went through the peer's URL: each read the model
	# and its shard and wrote its gradient there, none refused
	kill -TERM $SRV
	wait $SRV
	run -0 sed -n 's/^spirt-peer: stopped: \([0-9]*\) served, 0 refused$/\1/p' \
	    serve.log
	[ "$output" -ge $((3 * STEPS * 3)) ]
}

@test "parallel over ssh without --retries: the host's failure stops the step (75), nothing applied; the rerun resumes to the model bytes of xargs" {
	hosts_up
	run -0 spirt-train -q --cold -n 3 -b 16 --steps $STEPS -s ref

	run -75 on_hosts env SPIRT_FANOUT="$(fan)" \
	    spirt-train -q --cold -n 3 -b 16 --steps $STEPS -s s1
	assert_output --partial 'host 3: this function fails once'
	assert_line 'spirt-train: step 0: a gradient function failed'
	# the joblog says which, where, and how
	run -0 awk -F'\t' '$7 != 0 { print $2, $7, $9 }' jobs
	assert_output "$(netns_addr 3) 75 $(fn_env) spirt-grad $(cat flaky/failed)"
	run -0 spirt-store -s s1 ls model/
	assert_output --partial 'model/mlp@0'
	refute_output --partial 'model/mlp@1'
	# run again: it resumes at step 0 (host 3 works now)
	rm jobs
	run -0 on_hosts env SPIRT_FANOUT="$(fan)" \
	    spirt-train -q --cold -n 3 -b 16 --steps $STEPS -s s1
	jobs_ok
	same_model
}

@test "SPIRT_FANOUT: only for cold functions, not with labelflip's own: 64 before any work" {
	run -64 env SPIRT_FANOUT='parallel -I{}' spirt-train -q -s new.db
	assert_output 'spirt-train: SPIRT_FANOUT: it runs cold functions; give --cold'
	run -64 env SPIRT_FANOUT='parallel -I{}' spirt-train -q --cold \
	    --byzantine 1:labelflip -s new.db
	assert_output 'spirt-train: SPIRT_FANOUT: --byzantine 1:labelflip starts its functions itself'
	[ ! -e new.db ]
}

@test "SPIRT_FANOUT: GNU parallel on this machine, the model bytes of xargs" {
	command -v parallel >/dev/null || skip "no parallel (Debian package parallel)"
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
	base
	cp -r base ref
	mv base s1
	run -0 spirt-train -q --cold -n 3 -b 16 --steps 2 -s ref
	run -0 env SPIRT_FANOUT="parallel --will-cite -j 3 -I{} --joblog $PWD/jobs" \
	    spirt-train -q --cold -n 3 -b 16 --steps 2 -s s1
	[ "$(awk -F'\t' 'NR > 1 && $7 == 0' jobs | wc -l)" -eq 3 ]
	[ "$(spirt-store -s ref get model/mlp@2 | md5sum)" = \
	  "$(spirt-store -s s1 get model/mlp@2 | md5sum)" ]
}

@test "examples/parallel-ssh: its run across the namespace hosts, the same bytes as xargs" {
	hosts_up
	rm flaky/spirt-grad
	run -0 on_hosts env HOSTS="$HOSTS" LISTEN="$(netns_addr 1):$((PORT + 1))" \
	    STEPS=2 sh "$SPIRT_ROOT/examples/parallel-ssh/run.sh" "$PWD/w"
	assert_line "serving $PWD/w/peer.db at http://$(netns_addr 1):$((PORT + 1))"
	for i in 2 3 4; do
		assert_line --regexp "^  $(netns_addr $i) exit 0: [1-4]\$"
	done
	assert_line --regexp '^model/mlp@2: parallel and xargs identical \([0-9]+ [0-9]+\)$'
}
