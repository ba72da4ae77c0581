#!/usr/bin/env bats
# 64-slurm: a Slurm cluster on one machine (Debian's slurm-wlm 22.05): a
# munge daemon with a key made here, slurmctld and three slurmd "nodes"
# (slurmd -N, a port each), all with a slurm.conf written in the test's
# tmpdir and run in a network namespace of their own, so no port of this
# machine is taken.  spirt-train --cold runs in a salloc allocation of the
# three nodes, its functions srun job steps (SPIRT_FANOUT), reading and
# writing the peer's store through its URL with a function's credentials;
# the model bytes are xargs's.  Root only; the test starts and stops every
# daemon itself; each lives in the namespace, which teardown (or the
# harness's trap and reaper, when the test is killed) empties and deletes
# (tests/netns.bash).

load helper
load netns

PORT=7070
STEPS=3

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	export SPIRT_STORE="$BATS_TEST_TMPDIR/spirt.db"
	unset SPIRT_MAPSIZE SPIRT_MAPSIZE_MAX SPIRT_FANOUT
	export SLURM_CONF="$BATS_TEST_TMPDIR/slurm/slurm.conf"
}

teardown() {
	netns_teardown
	return 0
}

# in_ns CMD...: CMD in the cluster's network namespace; only that one, as
# slurmd needs this machine's /sys/fs/cgroup (ip netns exec would mount
# the namespace's own /sys, without it)
in_ns() {
	nsenter --net="/run/netns/$(netns_name 1)" "$@"
}

need() {
	netns_require
	local c
	for c in munged slurmctld slurmd srun salloc sinfo; do
		command -v $c >/dev/null ||
			skip "no $c (Debian packages slurmctld slurmd slurm-client munge)"
	done
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
	# srun gives the nodes its host's address to send the tasks' output
	# to: in the namespace only a loopback one is reachable
	local a
	a=$(getent hosts "$(hostname -s)" | awk '{ print $1; exit }')
	case $a in
	127.*) ;;
	*) skip "this machine's name resolves to \"$a\", not a loopback address its namespace can reach" ;;
	esac
}

# slurm_up: munged, slurmctld and nodes n1..n3, each with 1 CPU; waits
# (at most 60 s) until the three are idle
slurm_up() {
	local d=$PWD/slurm n k host
	mkdir -p "$d/state" "$d/spool/n1" "$d/spool/n2" "$d/spool/n3"
	chmod 700 "$d"
	# the key: 1 KiB of random bytes, only root may read it
	(umask 077 && head -c 1024 /dev/urandom >"$d/munge.key")
	# (-f: the tmpdir lies under /tmp, which munged would refuse as
	# world-writable)
	in_ns munged -F -f --key-file="$d/munge.key" --socket="$d/munge.sock" \
	    --pid-file="$d/munged.pid" --log-file="$d/munged.log" \
	    --seed-file="$d/munged.seed" >"$d/munged.out" 2>&1 &
	for k in $(seq 1 100); do
		[ -S "$d/munge.sock" ] && break
		sleep 0.1
	done
	host=$(hostname -s)
	cat >"$SLURM_CONF" <<-EOF
	ClusterName=spirt
	SlurmctldHost=$host(127.0.0.1)
	SlurmctldPort=6817
	AuthType=auth/munge
	CredType=cred/munge
	AuthInfo=socket=$d/munge.sock
	SlurmUser=root
	SlurmdUser=root
	StateSaveLocation=$d/state
	SlurmdSpoolDir=$d/spool/%n
	SlurmctldPidFile=$d/slurmctld.pid
	SlurmdPidFile=$d/slurmd.%n.pid
	SlurmctldLogFile=$d/slurmctld.log
	SlurmdLogFile=$d/slurmd.%n.log
	# no cgroups: processes tracked by their parent, tasks not bound
	ProctrackType=proctrack/linuxproc
	TaskPlugin=task/none
	SwitchType=switch/none
	MpiDefault=none
	SelectType=select/cons_tres
	SelectTypeParameters=CR_CPU
	SchedulerType=sched/builtin
	JobCompType=jobcomp/none
	AccountingStorageType=accounting_storage/none
	JobAcctGatherType=jobacct_gather/none
	MailProg=/bin/true
	# a loaded machine (CI, other tests) answers slowly: no message of
	# a job step gives up in 10 s
	MessageTimeout=60
	ReturnToService=2
	# three nodes on one machine: one CPU each, whatever it has
	SlurmdParameters=config_overrides
	NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=6821 CPUs=1
	NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=6822 CPUs=1
	NodeName=n3 NodeHostname=$host NodeAddr=127.0.0.1 Port=6823 CPUs=1
	PartitionName=spirt Nodes=n1,n2,n3 Default=YES MaxTime=10 State=UP
	EOF
	# (no cgroup plugin is used; slurmd initialises one all the same:
	# on a cgroup v2 machine not run by systemd; and where /sys/fs/cgroup
	# holds no cgroup file system at all (a chroot with a plain sysfs,
	# some containers), 22.05's "autodetect" fails ("No filesystem
	# mounted on /sys/fs/cgroup", slurmd exits): there cgroup/v1 named
	# outright, whose initialisation touches no file system, and which
	# nothing here calls (CgroupPlugin=disabled is Slurm 24.05's))
	printf 'IgnoreSystemd=yes\n' >"$d/cgroup.conf"
	case $(stat -f -c %T /sys/fs/cgroup 2>/dev/null) in
	cgroup2fs | tmpfs) ;;
	*) printf 'CgroupPlugin=cgroup/v1\n' >>"$d/cgroup.conf" ;;
	esac
	in_ns slurmctld -D -i -f "$SLURM_CONF" >"$d/slurmctld.out" 2>&1 &
	for n in n1 n2 n3; do
		in_ns slurmd -D -N $n -f "$SLURM_CONF" >"$d/slurmd.$n.out" 2>&1 &
	done
	for k in $(seq 1 600); do
		[ "$(in_ns sinfo -h -N -o %t 2>/dev/null | grep -c '^idle$')" -eq 3 ] &&
			return 0
		sleep 0.1
	done
	echo "slurm: the nodes are not idle after 60 s:" >&2
	in_ns sinfo -N >&2 || :
	tail -n 5 "$d"/*.log >&2
	return 1
}

# slurm_logs: what the daemons said last, for a failure's report
slurm_logs() {
	local f
	for f in slurm/*.log slurm/*.out serve.log; do
		[ -s "$f" ] || continue
		echo "== $f"
		tail -n 15 "$f"
	done
}

@test "slurm: spirt-train's functions as srun job steps on three slurmd nodes; the model bytes of xargs" {
	need
	netns_setup 1
	slurm_up
	# the group's key, peer p1's, function f1's
	group_keys
	spirt-shard -s base -q -n 3 --seed 1 \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz"
	spirt-shard -s base -q -d test "$FMNIST/t10k-images-idx3-ubyte.gz" \
	    "$FMNIST/t10k-labels-idx1-ubyte.gz"
	cp -r base ref
	mv base s1
	# the reference, with xargs
	run -0 spirt-train -q --cold -n 3 -b 16 --steps $STEPS -s ref

	# the peer serves its store to the nodes
	mkfifo ready
	nsenter --net="/run/netns/$(netns_name 1)" env SPIRT_KEY="$PWD/p1.key" SPIRT_TOKEN="$PWD/p1.tok" \
	    SPIRT_GROUP="$PWD/group.pub" spirt-peer serve -s "$PWD/s1" \
	    -l "127.0.0.1:$PORT" -F 3 3>ready 2>serve.log &
	srv=$!          # (nsenter and env exec it: the server itself)
	read -r -t 60 addr <ready
	# an allocation of the three nodes; in it each function an srun job
	# step of one task on one node
	fan="xargs -P 3 -I{} srun -N 1 -n 1 --exclusive -Q env"
	fan="$fan SPIRT_STORE=http://$addr SPIRT_KEY=$PWD/f1.key"
	fan="$fan SPIRT_TOKEN=$PWD/f1.tok SPIRT_GROUP=$PWD/group.pub"
	run in_ns timeout 300 salloc -N 3 -Q env SPIRT_FANOUT="$fan" \
	    spirt-train -q --cold -n 3 -b 16 --steps $STEPS -s s1
	[ "$status" -eq 0 ] || { echo "$output"; slurm_logs; false; }
	# every function was a job step, and every node ran some
	total=0
	for n in n1 n2 n3; do
		k=$(grep -c 'launch task StepId=[0-9]*\.[0-9]* request' \
		    slurm/slurmd.$n.log) || :
		[ "$k" -ge 1 ]
		total=$((total + k))
	done
	[ "$total" -eq $((3 * STEPS)) ]
	# through the peer's URL, none refused
	kill -TERM $srv
	wait $srv
	run -0 sed -n 's/^spirt-peer: stopped: \([0-9]*\) served, 0 refused$/\1/p' \
	    serve.log
	[ "$output" -ge $((3 * STEPS * 3)) ]
	# the same model, optimiser state and evaluations as xargs's
	for k in model/mlp@$STEPS opt/mlp@$STEPS; do
		[ "$(spirt-store -s ref get "$k" | md5sum)" = \
		  "$(spirt-store -s s1 get "$k" | md5sum)" ]
	done
	diff <(cut -f2- ref.train-mlp.tsv) <(cut -f2- s1.train-mlp.tsv)
}

@test "examples/slurm: its run in the cluster, the same bytes as xargs" {
	need
	netns_setup 1
	slurm_up
	run in_ns timeout 300 env STEPS=2 \
	    sh "$SPIRT_ROOT/examples/slurm/run.sh" "$PWD/w"
	[ "$status" -eq 0 ] || { echo "$output"; slurm_logs; false; }
	assert_line --regexp '^serving .*/w/peer.db at http://127\.0\.0\.1:[0-9]+$'
	assert_line --regexp '^model/mlp@2: srun and xargs identical \([0-9]+ [0-9]+\)$'
	# its functions were job steps: two steps of three
	[ "$(cat slurm/slurmd.n*.log | grep -c 'launch task StepId=')" -eq 6 ]
}

@test "examples/slurm: no cluster answers: 69" {
	# a cluster whose controller nobody runs (loopback port 1): sinfo
	# fails after its retries, 9 s (a missing slurm.conf it retries for
	# 60 s)
	printf '%s\n' ClusterName=none SlurmctldHost=localhost SlurmctldPort=1 \
	    'NodeName=n1 CPUs=1 State=UNKNOWN' \
	    'PartitionName=p Nodes=n1 Default=YES' >none.conf
	SLURM_CONF=$PWD/none.conf run -69 sh "$SPIRT_ROOT/examples/slurm/run.sh" "$PWD/w"
	assert_output 'slurm: no Slurm cluster answers here (sinfo fails)'
	[ ! -e w ]
}
