#!/usr/bin/env bats
# 62-state: a model's state beside its weights (spirt-model(5)).  A module
# defined here, with BatchNorm and a residual block, trains on a small
# .npy copy of Fashion-MNIST through spirt-train --function "spirt-torch
# grad": each function loads the model's state mstate/<m>@t into the
# buffers, writes what its forward pass measured as state/<t>/<w>, and
# the state of t+1 is the mean of the functions' states, written with
# model@t+1; three peers in network namespaces end with the same model
# and the same state, the mean of all six functions' states, and the
# model hash each signed covers the state.  Through a peer's URL a
# function reads and writes its state under its gradient's rules.

load helper
load netns
load bnnet

setup() {
	bnnet_setup
}

teardown() {
	if [ -n "${SRV-}" ]; then
		kill -TERM "$SRV" 2>/dev/null
		wait "$SRV" 2>/dev/null
	fi
	netns_teardown
	return 0
}

# recs STORE KEY...: each record of STORE to KEY.rec, '/' and '@' as '_'
recs() {
	local s=$1 k
	shift
	for k; do
		spirt-store -s "$s" get -f "$k" >"$(echo "$k" | tr '/@' '__').rec"
	done
}

@test "state: the BN statistics of a module trained by spirt-train --function are the mean of the functions' states, loaded before each forward pass" {
	spirt-shard -s s -q -n 2 X.npy y.npy
	spirt-shard -s s -q -d test tX.npy ty.npy
	spirt-torch init -s s -q -m r --module net.py -S 1
	run -0 spirt-store -s s show mstate/r@0
	assert_line 'dtype=f32'
	assert_line 'shape=16'
	recs s mstate/r@0
	spirt-train -q -s s -m r --spec softmax:784:10 -n 2 -b 16 --steps 3 \
	    -l 0.1 -o sgd --function "spirt-torch grad --module net.py" \
	    --evaluate "spirt-torch eval --module net.py" --eval-every 3
	recs s mstate/r@2 mstate/r@3 model/r@2 state/2/0 state/2/1
	# the state of step 3: the mean of what step 2's functions measured
	run "$PYTHON" - <<-PY
	from ref import *
	m, z = rec("mstate_r_3.rec"), rec("mstate_r_0.rec")
	mean_of(m, ["state_2_0.rec", "state_2_1.rec"], 3)
	assert np.abs(m.array - z.array).max() > 1e-3, "no change"
	PY
	echo "$output"; [ "$status" -eq 0 ]
	assert_line --regexp '^maxdiff '
	# what each function measured: PyTorch's own forward pass of
	# model@2 in training mode, from the buffers of mstate/r@2, on the
	# batch spirt-store batch serves for (2, w)
	for w in 0 1; do
		spirt-store -s s batch -t 2 -w $w -b 16 -S 1 --npy >b$w.npy
	done
	run "$PYTHON" - <<-PY
	import io
	from ref import *
	for w in (0, 1):
	    n = module("model_r_2.rec", "mstate_r_2.rec")
	    x = np.load(io.BytesIO(open("b%d.npy" % w, "rb").read()))
	    n.train()
	    with torch.no_grad():
	        n(torch.from_numpy(x))
	    got = torch.cat([b.reshape(-1) for b in buffers(n)]).numpy()
	    d = float(np.abs(got - rec("state_2_%d.rec" % w).array).max())
	    print("worker", w, "maxdiff", d)
	    assert d <= 1e-6
	PY
	echo "$output"; [ "$status" -eq 0 ]
	assert_line --regexp '^worker 1 maxdiff '
	# the evaluation reads the state: with the buffers of mstate/r@3 the
	# loss is the one PyTorch computes
	run -0 spirt-torch eval -s s -m r --module net.py
	assert_line 'step=3'
	l=$(sed -n 's/^loss=//p' <<<"$output")
	recs s model/r@3
	run "$PYTHON" - <<-PY
	import torch.nn.functional as F
	from ref import *
	n = module("model_r_3.rec", "mstate_r_3.rec")
	n.eval()
	with torch.no_grad():
	    z = n(torch.from_numpy(np.load("tX.npy")))
	    l = float(F.cross_entropy(z, torch.from_numpy(np.load("ty.npy"))))
	print("loss", l)
	assert abs(l - float("$l")) <= 1e-4 * max(1, l)
	PY
	echo "$output"; [ "$status" -eq 0 ]
}

@test "state: a model without buffers trains as before: no state record anywhere" {
	sed 's/self.bn[12](\(self.conv[12](.*)\))/\1/' net.py >plain.py
	! grep -q 'bn1(self' plain.py
	spirt-shard -s s -q -n 2 X.npy y.npy
	spirt-shard -s s -q -d test tX.npy ty.npy
	# (BatchNorm layers made but not used: their buffers are state, so
	# a module without them)
	sed -i '/nn.BatchNorm2d/d' plain.py
	spirt-torch init -s s -q -m r --module plain.py -S 1
	spirt-train -q -s s -m r --spec softmax:784:10 -n 2 -b 16 --steps 2 \
	    -l 0.1 -o sgd --function "spirt-torch grad --module plain.py" \
	    --evaluate "spirt-torch eval --module plain.py" --eval-every 2
	run -0 spirt-store -s s ls
	assert_line --regexp '^model/r@2	'
	refute_line --regexp '^(m?state)/'
}

@test "state through a peer's URL: the function reads the model's state and writes its own, the bytes of a local run; another worker's slot is refused" {
	spirt-shard -s s -q -n 2 X.npy y.npy
	spirt-torch init -s s -q -m r --module net.py -S 1
	cp -r s ref
	spirt-torch grad -s ref -q -m r --module net.py -t 0 -w 0 -b 16
	group_keys p1.w0
	mkfifo ready
	timeout -k 10 300 spirt-peer serve -s s -k p1.key -T p1.tok \
	    -g group.pub -l 127.0.0.1:0 -F 3 3>ready 2>srv.log &
	SRV=$!
	read -r -t 30 addr <ready
	fn="SPIRT_KEY=f1.key SPIRT_TOKEN=f1.tok SPIRT_GROUP=group.pub"
	env $fn spirt-torch grad -s "http://$addr" -q -m r --module net.py \
	    -t 0 -w 0 -b 16
	for k in state/0/0 grad/0/0; do
		spirt-store -s s get "$k" | cmp - <(spirt-store -s ref get "$k")
	done
	# worker 1's state slot is not this function's
	spirt-store -s ref get state/0/0 >st.rec
	run -65 --separate-stderr env $fn spirt-store -s "http://$addr" put \
	    state/0/1 st.rec
	run -66 spirt-store -s s get state/0/1
	kill -TERM "$SRV"
	wait "$SRV"
	SRV=
	grep -q "p1.w0: put state/0/1 (function): EADDR$" srv.log
}

@test "netns state: three peers train the BN module through spirt-torch: one model and one state, the mean of all six functions' states" {
	netns_require
	netns_setup 3
	netns_peers 3 7070
	spirt-shard -s base -q -n 6 --seed 1 X.npy y.npy
	spirt-shard -s base -q -d test tX.npy ty.npy
	spirt-torch init -s base -q -m r --module net.py -S 1
	spirt-store -s base get -f mstate/r@0 >z.rec
	for i in 1 2 3; do
		cp -r base s$i
	done
	STEPS=3
	for i in 1 2 3; do
		netns_exec $i env SPIRT_KEY="$PWD/p$i.key" \
		    SPIRT_TOKEN="$PWD/p$i.tok" SPIRT_GROUP="$PWD/group.pub" \
		    timeout 300 spirt-train -q -s "$PWD/s$i" -m r \
		    --spec softmax:784:10 -n 2 -b 16 -l 0.1 -o sgd \
		    --function "spirt-torch grad --module $PWD/net.py" \
		    --evaluate "spirt-torch eval --module $PWD/net.py" \
		    --peers "$PWD/peers" --peer $((i - 1)) --steps $STEPS \
		    --eval-every $STEPS --deadline 60000 --keep-digests \
		    >o$i 2>e$i &
		eval "pid$i=\$!"
	done
	wait $pid1 || fail "peer 1: $(cat e1)"
	wait $pid2 || fail "peer 2: $(cat e2)"
	wait $pid3 || fail "peer 3: $(cat e3)"
	for k in model/r@$STEPS mstate/r@$STEPS; do
		spirt-store -s s1 get -f "$k" >one.rec
		for i in 2 3; do
			spirt-store -s s$i get -f "$k" | cmp - one.rec
		done
	done
	# the state of the last step: the mean of the six functions' states
	# of the step before it, two in each peer's store (peer i's workers
	# 2(i-1) and 2(i-1)+1)
	t=$((STEPS - 1))
	for i in 1 2 3; do
		for w in $((2 * i - 2)) $((2 * i - 1)); do
			spirt-store -s s$i get -f state/$t/$w >st$w.rec
		done
	done
	spirt-store -s s1 get -f mstate/r@$STEPS >m.rec
	run "$PYTHON" - <<-PY
	from ref import *
	m, z = rec("m.rec"), rec("z.rec")
	mean_of(m, ["st%d.rec" % w for w in range(6)], $STEPS)
	assert np.abs(m.array - z.array).max() > 1e-3, "no change"
	PY
	echo "$output"; [ "$status" -eq 0 ]
	# the model hash every peer signed for step t covers its state: the
	# hash of model@t's hash and mstate@t's (docs/protocol.md), computed
	# here by tests/vhash.py
	spirt-store -s s1 get -f model/r@$t >mt.rec
	spirt-store -s s1 get -f mstate/r@$t >st.rec
	for i in 1 2 3; do
		spirt-store -s s$i get -f digest/$t/p$i >dg$i.rec
	done
	run "$PYTHON" - <<-PY
	import sys
	sys.path.insert(0, "$BATS_TEST_DIRNAME")
	from vhash import vhash
	def h(p):
	    return bytes.fromhex(vhash(open(p, "rb").read()))
	want = vhash(h("mt.rec") + h("st.rec"))
	for i in (1, 2, 3):
	    d = open("dg%d.rec" % i, "rb").read()
	    d = d[d.find(b"SPDG"):]
	    assert d[152:184].hex() == want, (i, d[152:184].hex(), want)
	print("signed", want)
	PY
	echo "$output"; [ "$status" -eq 0 ]
}
