#!/usr/bin/env bats
# 62-adapter: spirt-torch, a PyTorch module as a spirt function.  The
# module is defined here (a small convolutional net with a residual add);
# its gradient record of (t, w) is PyTorch's own gradient of the batch
# spirt-store batch serves, computed here; warm and cold write the same
# bytes; spirt-agg and spirt-update train on its records; it keeps the
# memory a step frees (no page faults a step); and every exit
# code of spirt-torch(1).

load helper

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	export SPIRT_STORE="$BATS_TEST_TMPDIR/spirt.db"
	export TMPDIR="$BATS_TEST_TMPDIR"
	export SPIRT_PYTHON="$PYTHON"
	"$PYTHON" -c 'import torch' 2>/dev/null ||
	    skip "python3-torch is not installed"
	cat >net.py <<-'PY'
	import torch
	from torch import nn
	import torch.nn.functional as F

	class Res(nn.Module):
	    def __init__(self):
	        super().__init__()
	        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
	        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
	        self.fc = nn.Linear(4 * 4 * 4, 3)

	    def forward(self, x):
	        h = F.relu(self.conv1(x))
	        h = F.relu(h + self.conv2(h))       # the residual add
	        h = F.max_pool2d(h, 2)
	        return self.fc(torch.flatten(h, 1))

	def model():
	    return Res()
	PY
	# 8x8 images of 3 classes, class c bright in rows 2c..2c+2
	"$PYTHON" - <<-'PY'
	import numpy as np
	r = np.random.default_rng(1)
	y = r.integers(0, 3, 300)
	x = r.random((300, 1, 8, 8), dtype=np.float32) * 0.5
	for i in range(300):
	    x[i, 0, 2 * y[i]:2 * y[i] + 3, :] += 0.6
	np.save("X.npy", x[:240]); np.save("y.npy", y[:240])
	np.save("tX.npy", x[240:]); np.save("ty.npy", y[240:])
	PY
	spirt-shard -q -n 2 X.npy y.npy
	spirt-shard -q -d test tX.npy ty.npy
}

# reference T W B: PyTorch's gradient of model/r@T on the batch of (T, W)
# with batch B, computed here: the parameters set by name from the
# record, the batch from spirt-store batch --npy; prints the largest
# difference to grad.rec's values, its loss and its samples
reference() {
	spirt-store get "model/r@$1" >m.rec
	spirt-store batch -t "$1" -w "$2" -b "$3" --npy >b.npy
	"$PYTHON" - <<-PY
	import io, sys
	import numpy as np
	import torch
	import torch.nn.functional as F
	$PYREC
	sys.path.insert(0, ".")
	import net
	torch.set_num_threads(1)
	m = net.model()
	v, at = load("m.rec")["a"], 0
	sd = {}
	for k, p in m.named_parameters():
	    sd[k] = torch.from_numpy(v[at:at + p.numel()].copy()).view(p.shape)
	    at += p.numel()
	assert at == v.size
	m.load_state_dict(sd)
	f = io.BytesIO(open("b.npy", "rb").read())
	x, y = np.load(f), np.load(f)
	loss = F.cross_entropy(m(torch.from_numpy(x)), torch.from_numpy(y).long())
	loss.backward()
	g = torch.cat([p.grad.reshape(-1) for _, p in m.named_parameters()])
	r = load("grad.rec")
	print("maxdiff=%.3g loss=%.9g samples=%d" % (
	    np.abs(g.numpy() - r["a"]).max(), abs(loss.item() - r["loss"]),
	    r["samples"] - len(y)))
	PY
}

# as_step NAME T: model/NAME@T, model/NAME@0's parameters recorded at step T
as_step() {
	spirt-store get "model/$1@0" >as.rec
	"$PYTHON" -c "$PYREC"'
r = st.read_record(open("as.rec", "rb"))
out(st.encode(r.array, name=r.name, step=int(sys.argv[1])))' "$2" |
	    spirt-store put "model/$1@$2"
}

# same_as_torch T W: spirt-torch's gradient of (T, W), batch 16, is the
# reference's, and its metadata spirt-grad's for the same (T, W)
same_as_torch() {
	spirt-torch grad -m r --module net.py -t "$1" -w "$2" -b 16 -o grad.rec
	run -0 reference "$1" "$2" 16
	echo "$1/$2: $output"
	[[ "$output" =~ ^maxdiff=([0-9.e-]+)\ loss=([0-9.e-]+)\ samples=0$ ]]
	awk -v d="${BASH_REMATCH[1]}" -v l="${BASH_REMATCH[2]}" \
	    'BEGIN { exit !(d <= 1e-6 && l <= 1e-6) }'
	spirt-grad -m g -t "$1" -w "$2" -b 16 -o g.rec
	diff <(spirt-store inspect g.rec | grep -E "^($META)=") \
	    <(spirt-store inspect grad.rec | grep -E "^($META)=")
}
META='step|origin|samples|count|revision|dtype'

@test "spirt-torch grad: the record is PyTorch's gradient of spirt-store batch's minibatch, with spirt-grad's metadata" {
	run -0 --separate-stderr spirt-torch init -m r --module net.py
	assert_equal "$stderr" 'spirt-torch: model/r@0: torch:net:383, 383 parameters'
	run -0 spirt-store show model/r@0
	assert_line 'name=torch:net:383'
	assert_line 'shape=383'
	assert_line 'step=0'
	# the parameters are the module's, in module.parameters() order
	spirt-store get model/r@0 >m0.rec
	"$PYTHON" -c "$PYREC"'
import torch
sys.path.insert(0, ".")
import net
torch.manual_seed(0)
v = torch.cat([p.reshape(-1) for p in net.model().parameters()])
assert (v.detach().numpy() == load("m0.rec")["a"]).all()'
	spirt-init -m g mlp:64-5-3
	for w in 0 1; do same_as_torch 0 $w; done
	# worker 1 dies at step 3: worker 0 takes its samples (revision 1,
	# its 72 samples left and worker 1's 72 over the epoch's 5 steps
	# left: 144 * 5 / 5 - 144 * 4 / 5 = 29 at step 7)
	for m in r g; do as_step $m 3; as_step $m 7; done
	spirt-shard -q -t 3 -b 16 --live 0
	same_as_torch 3 0
	same_as_torch 7 0
	run -0 spirt-store inspect grad.rec
	assert_line 'revision=1'
	assert_line 'samples=29'
	# a worker with no samples is spirt-grad's 66
	run -66 --separate-stderr spirt-torch grad -m r --module net.py -t 3 \
	    -w 1 -b 16
	[[ "$stderr" == 'spirt-store: data/train/assign: no samples for worker 1'* ]]
}

@test "spirt-torch grad: warm and cold write the same bytes; the warm protocol's answers" {
	spirt-torch init -q -m r --module net.py
	spirt-init -m g mlp:64-5-3
	spirt-torch grad -m r --module net.py -t 0 -w 1 -b 16 -o cold.rec
	spirt-torch grad -m r --module net.py -t 0 -w 1 -b 16 -o again.rec
	cmp cold.rec again.rec
	# a FIFO (or /dev/null) is written in place, never renamed over
	mkfifo pipe
	timeout 30 cat pipe >piped.rec &
	spirt-torch grad -m r --module net.py -t 0 -w 1 -b 16 -o pipe
	wait $!
	[ -p pipe ]
	cmp cold.rec piped.rec
	# a line refused, a step with no model, then a request still served
	run -66 --separate-stderr spirt-torch grad -i -m r --module net.py \
	    -w 0 -b 16 < <(printf '0 1\n0x\n9\n0\n')
	loss=$(spirt-store inspect cold.rec | sed -n 's/^loss=//p')
	assert_line --index 0 "step=0 worker=1 samples=16 loss=$loss"
	assert_line --index 1 'error=64'
	assert_line --index 2 'step=9 worker=0 error=66'
	assert_line --index 3 --regexp '^step=0 worker=0 samples=16 loss=[0-9.]+$'
	[ "${#lines[@]}" -eq 4 ]
	[[ "$stderr" == *'spirt-torch: stdin:2: "0x": junk after the step'* ]]
	spirt-store get grad/0/1 | cmp - cold.rec
	# a line too long is refused whole, its tail no request
	run -64 --separate-stderr spirt-torch grad -i -m r --module net.py \
	    -b 16 < <(printf '0 %0300d\n0\nx' 0)
	l0=$(spirt-store show grad/0/0 | sed -n 's/^loss=//p')
	assert_equal "$(printf '%s,' "${lines[@]}")" \
	    "error=64,step=0 worker=0 samples=16 loss=$l0,error=64,"
	# each refused line is told as spirt-grad tells it
	printf '0 %0300d\n00\n1 2 3\n1 01\n1 99999999999\n\n0 \n0\nx' 0 >bad.in
	run -64 --separate-stderr spirt-torch grad -i -m r --module net.py \
	    -b 16 <bad.in
	echo "$stderr" >torch.err
	run -64 --separate-stderr spirt-grad -i -m g -b 16 <bad.in
	echo "$stderr" | sed 's/^spirt-grad: /spirt-torch: /' | diff - torch.err
	[ "$(wc -l <torch.err)" -eq 8 ]
	# a warm function whose driver is killed ends
	mkfifo in
	sh -c 'SPIRT_PARENT=$$ spirt-torch grad -i -m r --module net.py \
	    <in >/dev/null & echo $! >wpid; exec 3>in; wait' &
	sh=$!
	until [ -s wpid ]; do sleep 0.1; done
	w=$(cat wpid)
	sleep 1
	kill -0 "$w"
	kill -KILL "$sh"
	wait "$sh" || :
	for ((i = 0; i < 300; i++)); do
		kill -0 "$w" 2>/dev/null || break
		sleep 0.1
	done
	run ! kill -0 "$w"
	# spirt-grad answers the same line the same way
	run -64 --separate-stderr spirt-grad -i -m g -b 16 < <(printf '0x\n')
	assert_output 'error=64'
	[[ "$stderr" == *'spirt-grad: stdin:1: "0x": junk after the step' ]]
}

@test "spirt-torch grad -i: PyTorch's gradient bit for bit step after step: a parameter the loss does not use is +0, a .grad the module sets itself, values whose squares overflow float32 are finite" {
	# the gradient is added into a buffer filled with -0.0, the parameters
	# view the model's answer, the finite check sums squares first
	cat >odd.py <<-'PY'
	import torch
	from torch import nn

	class Odd(nn.Module):
	    def __init__(self):
	        super().__init__()
	        self.fc = nn.Linear(64, 3)
	        self.unused = nn.Parameter(torch.ones(5))
	        self.own = nn.Parameter(torch.ones(3))
	        self.big = nn.Parameter(torch.ones(1))

	    def forward(self, x):
	        self.own.grad = None        # the module's own doing
	        z = self.fc(torch.flatten(x, 1)) * self.own
	        # class 0's logit 1e20: big's gradient about 7e19, its square
	        # above float32's largest; the loss finite
	        return z + torch.cat([self.big * 1e20, torch.zeros(2)])

	def model():
	    return Odd()
	PY
	spirt-torch init -q -m o --module odd.py
	# model@1: other parameters (each + 0.5)
	spirt-store get model/o@0 | "$PYTHON" -c "$PYREC"'
r = st.read_record(sys.stdin.buffer)
out(st.encode(r.array + np.float32(0.5), name=r.name, step=1))' |
	    spirt-store put model/o@1
	run -0 spirt-torch grad -i -m o --module odd.py -b 16 \
	    < <(printf '0 0\n1 0\n0 1\n')
	[ "${#lines[@]}" -eq 3 ]
	for tw in 0/0 1/0 0/1; do
		spirt-store get "model/o@${tw%/*}" >"m${tw%/*}.rec"
		spirt-store get "grad/$tw" >"g${tw%/*}.${tw#*/}.rec"
		spirt-store batch -t "${tw%/*}" -w "${tw#*/}" -b 16 --npy \
		    >"b${tw%/*}.${tw#*/}.npy"
	done
	run -0 "$PYTHON" - <<-PY
	import io
	import torch
	import torch.nn.functional as F
	$PYREC
	sys.path.insert(0, ".")
	import odd
	torch.set_num_threads(1)
	for t, w in ((0, 0), (1, 0), (0, 1)):
	    m = odd.model()
	    v, at = load("m%d.rec" % t)["a"], 0
	    with torch.no_grad():
	        for p in m.parameters():
	            p.copy_(torch.from_numpy(v[at:at + p.numel()]).view(p.shape))
	            at += p.numel()
	    f = io.BytesIO(open("b%d.%d.npy" % (t, w), "rb").read())
	    x, y = np.load(f), np.load(f)
	    loss = F.cross_entropy(m(torch.from_numpy(x)),
	                           torch.from_numpy(y).long())
	    loss.backward()
	    assert m.unused.grad is None
	    g = torch.cat([torch.zeros(p.numel()) if p.grad is None else
	                   p.grad.reshape(-1) for p in m.parameters()]).numpy()
	    r = load("g%d.%d.rec" % (t, w))
	    assert abs(m.big.grad.item()) > 1.9e19, m.big.grad
	    assert r["loss"] == loss.item(), (r["loss"], loss.item())
	    assert r["a"].tobytes() == g.tobytes(), (t, w, r["a"] - g)
	    print(t, w, "ok")
	PY
	assert_output $'0 0 ok\n1 0 ok\n0 1 ok'
}

@test "spirt-torch grad -i: one spirt-store pipe answers every request; one killed is replaced, one answering junk is 70" {
	spirt-torch init -q -m r --module net.py
	run -0 --separate-stderr spirt-torch grad -i -v -m r --module net.py \
	    -b 16 < <(printf '0 0\n0 1\n0 0\n')
	[ "${#lines[@]}" -eq 3 ]
	[ "$(grep -c '^spirt-torch: + spirt-store' <<<"$stderr")" -eq 1 ]
	[[ "$stderr" == *'spirt-torch: + spirt-store pipe'* ]]
	spirt-store get grad/0/1 >first.rec
	spirt-store rm grad/0/1
	# its pipe killed between two requests: the next starts another
	mkfifo in
	spirt-torch grad -i -m r --module net.py -b 16 <in >out 2>err &
	w=$!
	exec 5>in
	echo "0 0" >&5
	for ((i = 0; i < 600; i++)); do [ -s out ] && break; sleep 0.1; done
	p=$(cat /proc/"$w"/task/*/children)
	[ -n "$p" ]
	kill -KILL "$p"
	for ((i = 0; i < 100; i++)); do
		[[ "$(cat /proc/"$p"/stat 2>/dev/null)" != *") Z "* ]] || break
		sleep 0.1
	done
	echo "0 1" >&5
	exec 5>&-
	wait "$w"
	run -0 cat out
	assert_line --index 1 --regexp '^step=0 worker=1 samples=16 loss='
	run -0 cat err
	assert_output "spirt-torch: spirt-store pipe: killed by signal 9; another started"
	spirt-store get grad/0/1 | cmp - first.rec
	# a spirt-store whose pipe answers junk
	mkdir fake
	printf '#!/bin/sh\nread l\necho junk\ncat >/dev/null\n' >fake/spirt-store
	chmod +x fake/spirt-store
	run -70 --separate-stderr env PATH="$PWD/fake:$PATH" spirt-torch grad \
	    -m r --module net.py -t 0 -b 16 -o x.rec
	assert_equal "$stderr" 'spirt-torch: spirt-store pipe: answer "junk": not "code length"'
	[ ! -e x.rec ]
}

@test "spirt-torch: spirt-agg and spirt-update train the module on its records, the loss going down" {
	spirt-torch init -q -m r --module net.py
	run -0 spirt-torch eval -m r --module net.py -t 0
	assert_line --index 0 'model=r'
	assert_line 'spec=torch:net:383'
	assert_line 'dataset=test'
	assert_line 'samples=60'
	l0=$(sed -n 's/^loss=//p' <<<"$output")
	# one warm function serves both workers, as "One step by hand"
	coproc F { exec spirt-torch grad -q -i -m r --module net.py -b 16; }
	for ((t = 0; t < 12; t++)); do
		for w in 0 1; do
			echo "$t $w" >&"${F[1]}"
			read -r -t 120 ans <&"${F[0]}"
			echo "$ans"
			# (120 samples a worker: 7 steps of 16, then 8)
			[[ "$ans" == "step=$t worker=$w samples=$((
			    t % 8 == 7 ? 8 : 16)) loss="* ]]
		done
		spirt-agg -q -t $t
		spirt-update -q -m r -t $t -r 0.5
	done
	eval "exec ${F[1]}>&-"
	wait "$F_PID"
	run -0 spirt-torch eval -m r --module net.py
	assert_line 'step=12'
	l12=$(sed -n 's/^loss=//p' <<<"$output")
	a12=$(sed -n 's/^accuracy=//p' <<<"$output")
	echo "loss $l0 -> $l12, accuracy $a12"
	awk -v a="$l0" -v b="$l12" -v c="$a12" \
	    'BEGIN { exit !(b < 0.8 * a && c > 0.5) }'
	# eval's loss is PyTorch's on the test set
	spirt-store get model/r@12 >m.rec
	"$PYTHON" -c "$PYREC"'
import torch
import torch.nn.functional as F
sys.path.insert(0, ".")
import net
m = net.model()
torch.nn.utils.vector_to_parameters(torch.from_numpy(load("m.rec")["a"].copy()),
                                    m.parameters())
with torch.no_grad():
    z = m(torch.from_numpy(np.load("tX.npy")))
y = torch.from_numpy(np.load("ty.npy"))
print("%g %.4f" % (F.cross_entropy(z, y).item(),
                   (z.argmax(1) == y).double().mean().item()))' >ref
	assert_equal "$(cat ref)" "$l12 $a12"
}

@test "spirt-torch: every exit code of spirt-torch(1), and bad input changes nothing" {
	spirt-torch init -q -m r --module net.py
	spirt-init -m g mlp:64-5-3
	# a finite loss, an infinite gradient (sqrt's at 0)
	cat >inf.py <<-'PY'
	import torch
	from torch import nn

	class Inf(nn.Module):
	    def __init__(self):
	        super().__init__()
	        self.fc = nn.Linear(64, 3)
	        self.w = nn.Parameter(torch.zeros(1))

	    def forward(self, x):
	        return self.fc(torch.flatten(x, 1)) + torch.sqrt(self.w)

	def model():
	    return Inf()
	PY
	spirt-torch init -q -m q --module inf.py
	before=$(store_digest "$SPIRT_STORE")
	g() { spirt-torch grad --module net.py -b 16 "$@"; }
	run -64 --separate-stderr g -m r
	[[ "$stderr" == 'spirt-torch: grad: -t is required (or --serve)'* ]]
	run -64 --separate-stderr g -m r -t 0 -b 0
	[[ "$stderr" == "spirt-torch: -b '0': not a number in 1..2147483647"* ]]
	run -64 --separate-stderr spirt-torch init --module net.py -m r -t 3
	[[ "$stderr" == 'spirt-torch: -t: not an option of init'* ]]
	run -64 --separate-stderr spirt-torch grad -m r -t 0
	[[ "$stderr" == 'spirt-torch: --module: the module'* ]]
	run -64 spirt-torch frob --module net.py -m r
	# a model of another spec, and one of another module
	run -65 --separate-stderr g -m g -t 0
	assert_equal "$stderr" "spirt-torch: model/g@0: model 'mlp:64-5-3', the module's is 'torch:net:383'"
	echo 'def model(): return 3' >bad.py
	run -65 --separate-stderr spirt-torch grad --module bad.py -m r -t 0
	assert_equal "$stderr" 'spirt-torch: --module bad.py: the factory gave a int, not a torch.nn.Module'
	run -65 --separate-stderr spirt-torch grad --module net.py:nope -m r -t 0
	assert_equal "$stderr" 'spirt-torch: --module net.py: defines no function nope()'
	run -65 --separate-stderr spirt-torch grad --module inf.py -m q -t 0 \
	    -b 16
	# (refused by the pipe's putf32 that would store it)
	assert_equal "$stderr" \
	    'spirt-store: pipe: putf32 grad/0/0: values not finite'
	# with -o, or a module with state (written before the gradient):
	# checked in spirt-torch
	run -65 --separate-stderr spirt-torch grad --module inf.py -m q -t 0 \
	    -b 16 -o inf.rec
	[[ "$stderr" =~ ^spirt-torch:\ model/q@0:\ loss\ [0-9.]+:\ gradient\ not\ finite$ ]]
	[ ! -e inf.rec ]
	# no such model, module file, data set
	run -66 --separate-stderr g -m r -t 1
	[[ "$stderr" == *'spirt-store: model/r@1: '* ]]
	run -66 --separate-stderr spirt-torch grad --module no.py -m r -t 0
	assert_equal "$stderr" 'spirt-torch: --module no.py: no such file'
	run -66 g -m r -t 0 -d nope
	# no spirt-store to run
	run -69 --separate-stderr env PATH=/nonexistent \
	    "$SPIRT_ROOT/spirt-torch" grad --module net.py -m r -t 0
	[[ "$stderr" == 'spirt-torch: spirt-store: '* ]]
	# an output that cannot be created, standard output that fails
	run -73 --separate-stderr g -m r -t 0 -o nodir/x.rec
	[[ "$stderr" == 'spirt-torch: nodir/x.rec: No such file or directory' ]]
	run -74 --separate-stderr bash -c 'spirt-torch grad --module net.py \
	    -b 16 -m r -t 0 -o - >/dev/full'
	assert_equal "$stderr" 'spirt-torch: standard output: No space left on device'
	# the driver that started it is gone
	sleep 60 &
	other=$!
	run -75 --separate-stderr env SPIRT_PARENT=$other spirt-torch grad \
	    --module net.py -m r -t 0
	kill $other
	assert_equal "$stderr" "spirt-torch: SPIRT_PARENT $other: that process, which started this one, is gone"
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
	# and a model version is never overwritten
	run -73 --separate-stderr spirt-torch init -m r --module net.py
	[[ "$stderr" == 'spirt-store: model/r@0: key exists'* ]]
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
}

@test "spirt-torch: spirt-conform passes it; a torch.nn.Linear standing for softmax:4:3 gives spirt-grad's gradient" {
	printf 'from torch import nn\ndef model():\n    return nn.Linear(4, 3)\n' >lin.py
	run -0 spirt-conform -q --spec softmax:4:3 spirt-torch grad \
	    --module lin.py --spec softmax:4:3
	assert_output ''
	run -0 spirt-conform -q --evaluate --spec softmax:4:3 spirt-torch eval \
	    --module lin.py --spec softmax:4:3
	assert_output ''
	# the same layout (weight [3, 4] row-major, then bias), the same
	# mean cross-entropy: spirt-grad's gradient, up to float rounding
	"$PYTHON" -c 'import numpy as np
r = np.random.default_rng(2)
np.save("lX.npy", r.random((40, 4), dtype=np.float32))
np.save("ly.npy", r.integers(0, 3, 40))'
	export SPIRT_STORE=lin.db
	spirt-shard -q -n 2 lX.npy ly.npy
	spirt-init -q -m s -S 3 softmax:4:3
	spirt-grad -m s -t 0 -w 1 -b 8 -o s.rec
	spirt-torch grad -m s --module lin.py --spec softmax:4:3 -t 0 -w 1 \
	    -b 8 -o t.rec
	diff <(spirt-store inspect s.rec | grep -E "^($META|name|loss)=") \
	    <(spirt-store inspect t.rec | grep -E "^($META|name|loss)=") ||
	    "$PYTHON" -c "$PYREC"'
a, b = load("s.rec"), load("t.rec")
assert abs(a["loss"] - b["loss"]) <= 1e-6 * abs(a["loss"]), (a["loss"], b["loss"])'
	"$PYTHON" -c "$PYREC"'
d = np.abs(load("s.rec")["a"] - load("t.rec")["a"]).max()
print("maxdiff", d)
assert d <= 1e-6'
}

@test "spirt-torch: spirt-train --function and --evaluate train the module, warm and cold" {
	# a model of one's own and no --spec: not in the store, 64
	run -64 --separate-stderr spirt-train -q -m r -n 2 -b 16 -e 1 \
	    --function "spirt-torch grad --module net.py"
	[[ "$stderr" == "spirt-train: model r: not in $SPIRT_STORE, and no --spec: make its model@0 first"* ]]
	spirt-torch init -q -m r --module net.py -S 1
	# its spec is the one its model@0 names
	spirt-train -m r -n 2 -b 16 -e 1 -l 0.3 \
	    -o sgd --function "spirt-torch grad --module net.py" \
	    --evaluate "spirt-torch eval --module net.py" --eval-every 4 \
	    2>err
	grep -q "^spirt-train: training r (torch:net:383) in " err
	run -0 spirt-store show model/r@8
	assert_line 'name=torch:net:383'
	spirt-train -q --cold -m r -n 2 -b 16 -e 2 \
	    -l 0.3 -o sgd --function "spirt-torch grad --module net.py" \
	    --evaluate "spirt-torch eval --module net.py" --eval-every 4
	run -0 spirt-torch eval -m r --module net.py
	assert_line 'step=16'
	awk -v a="$(sed -n 's/^accuracy=//p' <<<"$output")" \
	    'BEGIN { exit !(a > 0.9) }'
	# the test set spirt-train names (--test) is eval's default
	run -66 --separate-stderr env SPIRT_DATASET_TEST=other \
	    spirt-torch eval -m r --module net.py
	[[ "$stderr" == *"data/other/info"* ]]
}

@test "spirt-torch grad through a peer's URL: the model, the batch and the record over HTTP, the bytes of a local run" {
	spirt-torch init -q -m r --module net.py
	for w in 0 1; do
		spirt-torch grad -m r --module net.py -t 0 -w $w -b 16 \
		    -o "local$w.rec"
	done
	group_keys p1.w0-1
	mkfifo ready
	timeout -k 10 300 spirt-peer serve -k p1.key -T p1.tok -g group.pub \
	    -l 127.0.0.1:0 -F 3 3>ready 2>srv.log &
	SRV=$!
	read -r -t 30 addr <ready
	SPIRT_STORE=http://$addr SPIRT_KEY=f1.key SPIRT_TOKEN=f1.tok \
	    SPIRT_GROUP=group.pub spirt-torch grad -m r --module net.py -t 0 \
	    -w 1 -b 16
	run -0 env SPIRT_STORE=http://$addr SPIRT_KEY=f1.key \
	    SPIRT_TOKEN=f1.tok SPIRT_GROUP=group.pub spirt-torch grad -i -m r \
	    --module net.py -b 16 < <(echo 0)
	assert_output --regexp '^step=0 worker=0 samples=16 loss='
	kill -TERM "$SRV"
	wait "$SRV"
	SRV=
	grep -qE '^spirt-peer: stopped: [0-9]+ served, 0 refused$' srv.log
	# the records the server wrote are the local runs' bytes
	for w in 0 1; do spirt-store get grad/0/$w | cmp - "local$w.rec"; done
	run -0 spirt-store ls grad/
	[ "${#lines[@]}" -eq 2 ]
}

@test "spirt-torch keeps the memory a step frees for the next (no page faults), unless the environment tunes malloc" {
	# a step's pattern: blocks of 3 MiB taken and freed together; glibc
	# left alone trims them and faults them in again each time
	cat >faults.py <<-'PY'
	import sys
	if sys.argv[1] == "keep":
	    from spirt.torch import keep_memory
	    keep_memory()
	def faults():
	    with open("/proc/self/stat") as f:
	        return int(f.read().rsplit(")", 1)[1].split()[7])
	for i in range(10):
	    if i == 5:
	        f0 = faults()
	    a = [bytearray(3 << 20) for _ in range(4)]
	    del a
	print((faults() - f0) // 5)
	PY
	export PYTHONPATH="$SPIRT_ROOT/python"
	run -0 "$PYTHON" faults.py keep
	[ "$output" -lt 100 ]
	run -0 "$PYTHON" faults.py -
	[ "$output" -gt 1000 ]
	run -0 env MALLOC_TRIM_THRESHOLD_=131072 "$PYTHON" faults.py keep
	[ "$output" -gt 1000 ]
	run -0 env GLIBC_TUNABLES=glibc.malloc.trim_threshold=131072 \
	    "$PYTHON" faults.py keep
	[ "$output" -gt 1000 ]
}

teardown() {
	if [ -n "${SRV-}" ]; then
		kill -TERM "$SRV" 2>/dev/null
		wait "$SRV" 2>/dev/null
	fi
	return 0
}
