#!/usr/bin/env bats
# 40-update: spirt-update optimisers, exactly-once, --keep, exit codes, a
# model's state beside its weights

load helper

# Python prelude: rec() makes a record, get() reads one back (as float64)
PRELUDE="$PYREC"'
def rec(a, name="m:6", step=0, origin=None, samples=0, loss=float("nan")):
    return st.encode(np.asarray(a, dtype=np.float32), name=name, step=step,
                     origin=origin, samples=samples, loss=loss)
def get(path):
    r = load(path)
    r["a"] = r["a"].astype(np.float64)
    return r
T0 = np.array([1, -2, 0.5, 3, -1, 0.25])
G = [np.array([0.5, -1, 2, 0.25, -0.5, 1]),
     np.array([-0.25, 0.5, 1, -2, 0.75, 0.1])]
'

py() {
	"$PYTHON" -c "$PRELUDE$1"
}

# model/m@0, agg/0 and agg/1 in the store
seed() {
	py "out(rec(T0))" >m0.rec
	py "out(rec(G[0], step=0))" >a0.rec
	py "out(rec(G[1], step=1))" >a1.rec
	spirt-store put model/m@0 m0.rec &&
	spirt-store put agg/0 a0.rec &&
	spirt-store put agg/1 a1.rec
}

# check KEY PYTHON-EXPR [PYTHON-DEFS]: the stored value is within 1e-5 of
# the expression
check() {
	spirt-store get "$1" >got.rec
	py "${3:-}
r = get('got.rec'); want = np.asarray($2, dtype=np.float64)
d = np.abs(r['a'] - want).max()
assert d <= 1e-5 * max(1, np.abs(want).max()), 'maxdiff %g: %s' % (d, r['a'])
"
}

@test "sgd: model@t+1 = model@t - lr * agg/t, state and metadata" {
	seed
	run -0 --separate-stderr spirt-update -m m -t 0 -r 0.1
	[ -z "$output" ] && [ -z "$stderr" ]
	check model/m@1 'T0 - 0.1 * G[0]'
	run -0 spirt-store show model/m@1 opt/m@1
	assert_line 'step=1'
	assert_line 'name=m:6'
	assert_line 'name=sgd'
	assert_line 'shape=0x6'
	assert_line 'count=1'
	# the newest version when no step is given
	run -0 spirt-update -m m -r 0.1 --wd 0.5
	check model/m@2 '(T0 - 0.1 * G[0]) - 0.1 * (G[1] + 0.5 * (T0 - 0.1 * G[0]))'
}

@test "momentum, Nesterov, Adam and AdamW over two steps match numpy" {
	seed
	for o in momentum nesterov adam adamw; do
		s=s-$o
		cp -R spirt.db "$s"
		case $o in
		nesterov) a="--opt momentum --nesterov" ;;
		*) a="--opt $o" ;;
		esac
		spirt-update -s "$s" -m m -t 0 -r 0.1 --momentum 0.5 --wd 0.01 \
			--beta1 0.8 --beta2 0.9 --eps 1e-6 $a
		spirt-update -s "$s" -m m -t 1 -r 0.1 --momentum 0.5 --wd 0.01 \
			--beta1 0.8 --beta2 0.9 --eps 1e-6 $a
		SPIRT_STORE=$s check model/m@2 "run('$o')" "
def run(o):
    t = T0.copy(); v = np.zeros(6); m = np.zeros(6); s = np.zeros(6)
    for k, g in enumerate(G):
        if o != 'adamw': g = g + 0.01 * t
        if o in ('momentum', 'nesterov'):
            v = 0.5 * v + g
            t = t - 0.1 * (g + 0.5 * v if o == 'nesterov' else v)
        else:
            m = 0.8 * m + 0.2 * g; s = 0.9 * s + 0.1 * g * g
            mh = m / (1 - 0.8 ** (k + 1)); sh = s / (1 - 0.9 ** (k + 1))
            t = t - 0.1 * mh / (np.sqrt(sh) + 1e-6) - (
                0.1 * 0.01 * t if o == 'adamw' else 0)
    return t"
		run -0 spirt-store -s "$s" show opt/m@2
		assert_line "count=2"
	done
}

@test "learning-rate schedules are functions of the step" {
	seed
	spirt-update -m m -t 0 -r 1 --schedule step --lr-every 1 --lr-gamma 0.5
	spirt-update -m m -t 1 -r 1 --schedule step --lr-every 1 --lr-gamma 0.5
	check model/m@2 'T0 - G[0] - 0.5 * G[1]'
	spirt-store rm model/m@1 model/m@2 opt/m@1 opt/m@2
	spirt-update -m m -t 0 -r 1 --schedule cosine --lr-total 1 --lr-min 0.25
	spirt-update -m m -t 1 -r 1 --schedule cosine --lr-total 1 --lr-min 0.25
	check model/m@2 'T0 - G[0] - 0.25 * G[1]'
	run -64 spirt-update -m m -t 0 --schedule linear
}

@test "exactly once: a second update of step t changes nothing, exit 0" {
	seed
	spirt-update -m m -t 0 -r 0.1
	before=$(store_digest spirt.db)
	run -0 --separate-stderr spirt-update -m m -t 0 -r 0.1 --opt adam
	[[ "$stderr" == *"model/m@1 exists: step 0 already applied, nothing done"* ]]
	[ "$(store_digest spirt.db)" = "$before" ]
	run -0 --separate-stderr spirt-update -q -m m -t 0 <a0.rec
	[ -z "$stderr" ]
	run -0 --separate-stderr spirt-update -m m - <a0.rec
	[[ "$stderr" == *"already applied"* ]]
	[ "$(store_digest spirt.db)" = "$before" ]
}

@test "the aggregate from stdin or a file; its step is the default" {
	seed
	spirt-store rm agg/0
	spirt-update -m m -r 0.1 - <a0.rec
	check model/m@1 'T0 - 0.1 * G[0]'
	spirt-update -m m -r 0.1 a1.rec
	check model/m@2 'T0 - 0.1 * G[0] - 0.1 * G[1]'
	run -65 --separate-stderr spirt-update -m m -t 2 a1.rec
	[[ "$stderr" == *"a1.rec: step 1, not 2"* ]]
	run -64 spirt-update -m m a0.rec a1.rec
}

@test "--keep K removes older model and optimiser versions in the same txn" {
	seed
	spirt-update -m m -t 0 --opt momentum
	run -0 spirt-update -m m -t 1 --opt momentum -k 1
	run -0 spirt-store ls
	refute_line --partial 'model/m@0'
	refute_line --partial 'model/m@1'
	refute_line --partial 'opt/m@1'
	assert_line --partial 'model/m@2'
	assert_line --partial 'opt/m@2'
	assert_line --partial 'agg/0'
}

# reboot: what the store looks like after a power loss or reboot (another
# boot id on the scratch environment, see spirt-store(5))
reboot() {
	echo another-boot >"$SPIRT_STORE/scratch/boot"
}

@test "--checkpoint N: durable every N versions, volatile between; a reboot loses only those" {
	seed
	py "out(rec(G[0], step=2))" >a2.rec
	spirt-store put agg/2 a2.rec
	for t in 0 1 2; do
		run -0 spirt-update -m m -t "$t" --opt momentum --checkpoint 2
	done
	run -0 spirt-store ls model/
	assert_line --partial 'model/m@1'
	assert_line --partial 'model/m@3'
	# exactly once holds for a volatile version
	run -0 --separate-stderr spirt-update -m m -t 2 --opt momentum --checkpoint 2
	[[ "$stderr" == *"model/m@3 exists"* ]]
	v1=$(spirt-store get model/m@1 | cksum) v2=$(spirt-store get model/m@2 | cksum)
	reboot
	run -0 spirt-store ls model/
	refute_line --partial 'model/m@1'
	refute_line --partial 'model/m@3'
	assert_line --partial 'model/m@2'
	assert_line --partial 'model/m@0'
	run -0 spirt-store ls opt/
	assert_output --partial 'opt/m@2'
	refute_output --partial 'opt/m@1'
	# the next run redoes step 2 from the durable version: same bytes
	# (agg/2 was in the scratch environment too)
	spirt-store put agg/2 a2.rec
	run -0 spirt-update -m m -t 2 --opt momentum --checkpoint 2
	[ "$(spirt-store get model/m@2 | cksum)" = "$v2" ]
	run -0 spirt-store ls model/
	assert_line --partial 'model/m@3'
	# the last step of a cosine schedule is always durable
	py "out(rec(G[1], step=3))" >a3.rec
	spirt-store put agg/3 a3.rec
	run -0 spirt-update -m m -t 3 --opt momentum --checkpoint 100 \
	    --schedule cosine --lr-total 4
	reboot
	run -0 spirt-store ls model/
	assert_line --partial 'model/m@4'
	refute_line --partial 'model/m@3'
	# persist makes volatile versions durable
	py "out(rec(G[0], step=4))" >a4.rec
	spirt-store put agg/4 a4.rec
	run -0 spirt-update -m m -t 4 --opt momentum --checkpoint 100
	run -0 --separate-stderr spirt-store persist model/m@
	[ "$stderr" = 'spirt-store: model/m@: 1 volatile value made durable' ]
	reboot
	run -0 spirt-store ls
	assert_line --partial 'model/m@5'
	refute_line --partial 'opt/m@5'        # not persisted: lost
	[ -n "$v1" ]
}

@test "SPIRT_* environment variables are the fallbacks" {
	seed
	SPIRT_MODEL=m SPIRT_LR=0.5 SPIRT_OPT=momentum SPIRT_MOMENTUM=0.5 \
		SPIRT_KEEP=1 spirt-update -t 0
	check model/m@1 'T0 - 0.5 * G[0]'
	run -0 spirt-store show opt/m@1
	assert_line 'name=momentum'
	run -66 spirt-store show model/m@0
	# options win over the environment
	SPIRT_MODEL=m SPIRT_LR=0.5 spirt-update -t 1 -r 0.25 --opt momentum \
		--momentum 0
	check model/m@2 'T0 - 0.5 * G[0] - 0.25 * (G[1] + 0.5 * 0)'
	SPIRT_LR=x run -64 spirt-update -m m -t 2
	SPIRT_OPT=rmsprop run -64 spirt-update -m m -t 2
}

@test "missing store, model or aggregate: exit 66, nothing written" {
	run -66 spirt-update -m m -t 0 -s nowhere
	seed
	before=$(store_digest spirt.db)
	run -66 --separate-stderr spirt-update -m m -t 5
	[[ "$stderr" == *"model/m@5: no such key"* ]]
	run -66 --separate-stderr spirt-update -m other
	[[ "$stderr" == *"model/other@"* ]]
	spirt-store rm agg/0
	before=$(store_digest spirt.db)
	run -66 --separate-stderr spirt-update -m m -t 0
	[[ "$stderr" == *"agg/0: no such key"* ]]
	run -66 spirt-update -m m no-such.rec
	[ "$(store_digest spirt.db)" = "$before" ]
}

@test "bad aggregates: shape, step, model, NaN, truncated -> 65, nothing written" {
	seed
	before=$(store_digest spirt.db)
	py "out(rec(np.zeros(5)))" >short.rec
	run -65 --separate-stderr spirt-update -m m -t 0 short.rec
	[[ "$stderr" == *"short.rec: 5 values, model/m@0 has 6: shapes differ"* ]]
	py "out(rec(G[0], name='m:other'))" >other.rec
	run -65 --separate-stderr spirt-update -m m -t 0 other.rec
	[[ "$stderr" == *'other.rec: model "m:other", model/m@0 is "m:6"'* ]]
	py "
g = G[0].copy(); g[4] = np.nan
out(rec(g))" >nan.rec
	run -65 --separate-stderr spirt-update -m m - <nan.rec
	[[ "$stderr" == *"stdin: NaN or Inf"* ]]
	head -c 90 a0.rec >part.rec
	run -65 --separate-stderr spirt-update -m m - <part.rec
	[[ "$stderr" == *"stdin: truncated record"* ]]
	cat a0.rec a0.rec >two.rec
	run -65 --separate-stderr spirt-update -m m two.rec
	[[ "$stderr" == *"two.rec: more than one record"* ]]
	# an update that overflows the model
	py "out(rec(np.full(6, 3e38)))" >big.rec
	run -65 spirt-update -m m -r 10 big.rec
	[ "$(store_digest spirt.db)" = "$before" ]
}

@test "state of another optimiser: 65; stray opt@t+1: 73" {
	seed
	spirt-update -m m -t 0 --opt momentum
	before=$(store_digest spirt.db)
	run -65 --separate-stderr spirt-update -m m -t 1 --opt adam
	[[ "$stderr" == *"opt/m@1: momentum state, not adam"* ]]
	[ "$(store_digest spirt.db)" = "$before" ]
	spirt-store get opt/m@1 | spirt-store put opt/m@2
	before=$(store_digest spirt.db)
	run -73 spirt-update -m m -t 1 --opt momentum
	[ "$(store_digest spirt.db)" = "$before" ]
}

@test "usage errors exit 64; -v reports timings" {
	seed
	run -64 --separate-stderr spirt-update -t 0
	[[ "$stderr" == *"no model"* ]]
	run -64 spirt-update -m m --opt rmsprop
	run -64 spirt-update -m m --opt adam --nesterov
	run -64 spirt-update -m m -r 0.1 --schedule cosine --lr-min 1
	run -64 spirt-update -m m -r -1
	run -64 spirt-update -m m --beta2 1
	run -64 spirt-update -m m -k x
	run -0 --separate-stderr spirt-update -v -m m -t 0 --opt adam
	[[ "$stderr" == *"model/m@1: adam, lr 0.01"*"work"*"total"* ]]
}

@test "large models: values built in the map match numpy (adam, momentum, sgd)" {
	py "
r = np.random.default_rng(3)
out(rec(r.standard_normal(5000)))" >big0.rec
	py "
r = np.random.default_rng(4)
out(rec(r.standard_normal(5000), step=0))" >bigg.rec
	for o in sgd momentum adam; do
		s=s-$o
		spirt-store -s "$s" put model/m@0 big0.rec
		spirt-update -s "$s" -m m -r 0.1 --opt $o bigg.rec
		SPIRT_STORE=$s check model/m@1 "
t - 0.1 * (g / (np.abs(g) + 1e-8) if '$o' == 'adam' else g)" "
t = get('big0.rec')['a']; g = get('bigg.rec')['a']"
	done
	run -0 spirt-store -s s-adam show opt/m@1
	assert_line 'shape=2x5000'
}

@test "warm mode (-i): one update per step line, same result as cold" {
	seed
	cp -R spirt.db cold.db
	set -- -m m -r 0.1 --opt adam -k 2 --schedule step --lr-every 1 \
		--lr-gamma 0.5
	run -66 --separate-stderr spirt-update -i "$@" <<-EOF2
		0
		0
		bad
		1
		2
	EOF2
	[ "${#lines[@]}" -eq 5 ]
	assert_line --index 0 'step=0 lr=0.1'
	assert_line --index 1 'step=0 applied=already'
	assert_line --index 2 'error=64'
	assert_line --index 3 'step=1 lr=0.05'
	assert_line --index 4 'step=2 error=66'
	[[ "$stderr" == *"model/m@1 exists: step 0 already applied"* ]]
	[[ "$stderr" == *'stdin:3: "bad": expected a step'* ]]
	[[ "$stderr" == *"agg/2: no such key"* ]]
	spirt-update -s cold.db -t 0 "$@"
	spirt-update -s cold.db -t 1 "$@"
	for k in model/m@2 opt/m@2; do
		spirt-store get "$k" >warm.rec
		spirt-store -s cold.db get "$k" >cold.rec
		cmp warm.rec cold.rec
	done
	run -0 spirt-store ls
	refute_line --partial 'model/m@0'
	# all fine: exit 0; -q: no notes
	run -0 --separate-stderr spirt-update -q -i "$@" <<<1
	assert_output 'step=1 applied=already'
	[ -z "$stderr" ]
	run -64 spirt-update -i -m m a0.rec
}

# junk: request lines no warm tool may run (docs/contracts.md), one a
# line; the last has no newline
junk() {
	local x
	x=$(printf '%0255d' 0 | tr 0 x)
	{
		printf '%s0\n' "$x"             # 256 bytes, ending in a step
		printf '%s0\n' "${x%x}"         # 255 bytes, the same
		printf '%0100000d\n' 1          # 100000 digits
		printf '0\0\n'                  # embedded NUL
		printf '\0000\n'
		printf '%s\n' '' x 1x '0 ' ' 0' +0 -0 00 07 0x1 1e3 $'0\r' \
			$'0\t1' '0 0 0' '0 x' '0  1' '0 -1' '0 01' '0 1 ' \
			18446744073709551615 99999999999999999999999 \
			'0 4294967295' '0 99999999999'
		printf '0'                      # no newline at the end
	}
}

# serve_junk TOOL ARGS...: every line of junk answered error=64, one
# message each naming the line, exit 64, nothing written
serve_junk() {
	local before n i
	junk >junk.in
	n=$(($(tr -cd '\n' <junk.in | wc -c) + 1))
	before=$(store_digest "$SPIRT_STORE")
	run -64 --separate-stderr "$@" -i <junk.in
	[ "${#lines[@]}" -eq "$n" ] || fail "$1: ${#lines[@]} answers to $n lines"
	for ((i = 0; i < n; i++)); do
		[ "${lines[$i]}" = 'error=64' ] ||
			fail "$1: line $((i + 1)) answered ${lines[$i]}"
	done
	[ "${#stderr_lines[@]}" -eq "$n" ] || fail "$1: $stderr"
	for ((i = 0; i < n; i++)); do
		[[ "${stderr_lines[$i]}" == "$1: stdin:$((i + 1)): "* ]] ||
			fail "$1: ${stderr_lines[$i]}"
	done
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
	junk_err=$stderr
	# after the junk (its last line now "0x"), a good line is served
	{ junk; printf 'x\n0\n'; } >junk.in
	run -64 --separate-stderr "$@" -i <junk.in
	[ "${#lines[@]}" -eq "$((n + 1))" ]
	[ "${lines[$((n - 1))]}" = 'error=64' ]
	[[ "${lines[$n]}" == step=0\ * && "${lines[$n]}" != *error=* ]] ||
		fail "$1: ${lines[$n]}"
}

@test "warm mode: the same junk lines get error=64 from every warm tool" {
	awk 'BEGIN { for (i = 0; i < 40; i++)
		printf "%d,%.3f,%.3f\n", i % 3, (i % 7) / 7, (i % 5) / 5 }' \
	    >train.csv
	spirt-shard -q -n 2 train.csv
	spirt-init -q -m m softmax:2:3
	serve_junk spirt-grad -m m -b 4
	[[ "$junk_err" == *'stdin:1: "xxxxx'*'...": line longer than 255'* ]]
	[[ "$junk_err" == *'stdin:4: "0\x00": junk after the step'* ]]
	[[ "$junk_err" == *'stdin:29: "0": no newline at the end of input'* ]]
	spirt-grad -m m -b 4 -t 0 -w 1
	serve_junk spirt-agg -R
	[[ "$junk_err" == *'stdin:19: "0 0 0": junk after the step (a'* ]]
	spirt-agg -t 0 -R
	serve_junk spirt-update -m m -r 0.1
	[[ "$junk_err" == *'stdin:25: "18446744073709551615": step above'* ]]
}

@test "-p, -o: a model file in, the next one out, the store's bytes" {
	seed
	set -- -r 0.1 --opt adam --wd 0.01
	SPIRT_STORE=$PWD/none.db spirt-update -p m0.rec -o f1.rec "$@" a0.rec
	[ ! -e none.db ]
	SPIRT_STORE=$PWD/none.db spirt-update -p f1.rec -o f1.rec "$@" \
		<a1.rec
	spirt-update -m m -t 0 "$@"
	spirt-update -m m -t 1 "$@"
	{ spirt-store get model/m@2; spirt-store get opt/m@2; } >want.rec
	cmp want.rec f1.rec
	# sgd: the model alone; standard output is the default
	spirt-update -p m0.rec -r 0.1 a0.rec >s1.rec
	spirt-store -s s.db put model/m@1 s1.rec
	run -0 spirt-store -s s.db show model/m@1
	assert_line 'step=1'
	py "
r = get('s1.rec'); assert r['step'] == 1 and r['name'] == 'm:6'
import os; assert os.path.getsize('s1.rec') == os.path.getsize('m0.rec')"
	run -0 --separate-stderr spirt-update -v -p m0.rec -o v.rec a0.rec
	[[ "$stderr" == *"v.rec: step 1: sgd, lr 0.01"* ]]
}

@test "-p, -o errors: step, state, records, files, usage; nothing written" {
	seed
	run -65 --separate-stderr spirt-update -p m0.rec -o x.rec a1.rec
	[[ "$stderr" == *"a1.rec: step 1, not 0"* ]]
	run -65 --separate-stderr spirt-update -p m0.rec -o x.rec -t 1 a1.rec
	[[ "$stderr" == *"m0.rec: model step 0, not 1"* ]]
	spirt-update -p m0.rec -o f1.rec --opt momentum a0.rec
	run -65 --separate-stderr spirt-update -p f1.rec -o x.rec --opt adam \
		a1.rec
	[[ "$stderr" == *"f1.rec: record 1: momentum state, not adam"* ]]
	cat f1.rec a1.rec >three.rec
	run -65 --separate-stderr spirt-update -p three.rec -o x.rec \
		--opt momentum a1.rec
	[[ "$stderr" == *"three.rec: record 2: a model file holds the model and its optimiser state, nothing after them: malformed input data" ]]
	py "out(rec(np.zeros(5)))" >short.rec
	run -65 --separate-stderr spirt-update -p short.rec -o x.rec a0.rec
	[[ "$stderr" == *"a0.rec: 6 values, short.rec has 5: shapes differ"* ]]
	head -c 100 m0.rec >part.rec
	run -65 spirt-update -p part.rec -o x.rec a0.rec
	run -66 --separate-stderr spirt-update -p no-such.rec -o x.rec a0.rec
	[[ "$stderr" == *"no-such.rec"* ]]
	run -73 --separate-stderr spirt-update -p m0.rec -o no-dir/x.rec a0.rec
	[ "$stderr" = 'spirt-update: no-dir/x.rec: No such file or directory' ]
	[ ! -e x.rec ]
	run -64 spirt-update -m m -o x.rec a0.rec
	run -64 spirt-update -i -p m0.rec
	run -74 sh -c 'spirt-update -p m0.rec a0.rec >/dev/full'
}

@test "a store-free pipe: spirt-grad -p x 4 | spirt-agg | spirt-update -p" {
	spirt-grad -h | grep -q -- '-D file' || skip "spirt-grad without -p/-D"
	awk 'BEGIN { for (i = 0; i < 40; i++)
		printf "%d,%.3f,%.3f,%.3f,%.3f\n", i % 3, (i % 7) / 7,
		    (i % 5) / 5, (i % 3) / 3, (i % 11) / 11 }' >train.csv
	spirt-shard -q -n 4 -o d.spt train.csv
	spirt-init -q -o m.rec mlp:4-5-3
	export SPIRT_STORE=$PWD/none.db
	for t in 0 1 2; do
		for w in 0 1 2 3; do
			spirt-grad -p m.rec -D d.spt -w $w -b 8 -o -
		done | spirt-agg --trim 0.25 |
			spirt-update -p m.rec -o m.rec --opt adam -r 0.01
	done
	[ ! -e none.db ]
	py "
r = get('m.rec'); assert r['step'] == 3 and r['name'] == 'mlp:4-5-3'"
	# the second record is Adam's state after three steps
	py "
r = list(st.read_records(open('m.rec', 'rb')))[1]
assert (r.name, r.step, r.count) == ('adam', 3, 3)"
}

@test "warm agg and update end cleanly on SIGTERM between steps (exit 0)" {
	"$PYTHON" -c 'import numpy as np; np.save("z.npy", np.zeros(3, "f4"))'
	spirt-store import z z.npy      # a store to serve
	for tool in spirt-agg spirt-update; do
		mkfifo "in.$tool"
		case $tool in
		spirt-agg) spirt-agg -q --serve <>"in.$tool" > "out.$tool" & ;;
		*) spirt-update -q -m m --serve <>"in.$tool" > "out.$tool" & ;;
		esac
		pid=$!
		# (its SIGTERM handler set: SIGTERM is bit 15 of SigCgt)
		for i in $(seq 300); do
			caught "$pid" 15 && break
			sleep 0.1
		done
		kill -0 "$pid"          # still waiting for a step
		kill -TERM "$pid"
		rc=0
		wait "$pid" || rc=$?
		# 0, not 143: it ended by itself, it was not killed
		[ "$rc" -eq 0 ] || fail "$tool: exit $rc after SIGTERM"
	done
}

@test "a model file (-p) is one rule in grad, eval, update: trailing bytes 65" {
	awk 'BEGIN { for (i = 0; i < 12; i++)
		printf "%d,%d,%d,%d,%d\n", i % 3, i % 2, i % 5, i % 7, i % 4 }' \
	    >train.csv
	spirt-shard -q -o d.spt train.csv
	spirt-init -q -o m.rec mlp:4-5-3
	spirt-grad -p m.rec -D d.spt -o g.rec
	# model + Adam state: a model file all three tools take
	spirt-update -p m.rec -o ms.rec --opt adam g.rec
	spirt-grad -p ms.rec -D d.spt -o g1.rec
	spirt-eval -p ms.rec -D d.spt >/dev/null
	spirt-update -p ms.rec -o /dev/null --opt adam -t 1 g1.rec
	# the same files with bytes after them: every tool refuses, naming it
	{ cat m.rec; printf 'junk'; } >mj.rec
	{ cat m.rec; printf '\n'; } >mn.rec
	cat ms.rec g1.rec >m3.rec
	for f in mj mn m3; do
		case $f in
		m3) want="$f.rec: record 2: a model file holds the model and its optimiser state, nothing after them" ;;
		mn) want="$f.rec: record 1: bad magic (not a spirt record)" ;;
		*) want="$f.rec: record 1: bad magic (not a spirt record)" ;;
		esac
		run -65 --separate-stderr spirt-grad -p $f.rec -D d.spt -o x.rec
		[[ "$stderr" == "spirt-grad: $want"* ]]
		run -65 --separate-stderr spirt-eval -p $f.rec -D d.spt
		[[ "$stderr" == "spirt-eval: $want"* ]]
		run -65 --separate-stderr spirt-update -p $f.rec -o x.rec \
		    --opt adam -t 1 g1.rec
		[[ "$stderr" == "spirt-update: $want"* ]]
		run -65 bash -c "cat $f.rec | spirt-grad -p - -D d.spt -o x.rec"
	done
	[ ! -e x.rec ]
}

@test "invalid model names: 64 at once in update, grad, eval and init" {
	seed
	before=$(store_digest "$SPIRT_STORE")
	long=$(printf 'a%.0s' $(seq 600))
	for n in 'x@1' '' 'a/b' '..' "$long"; do
		run -64 --separate-stderr spirt-update -m "$n" a0.rec
		[[ "$stderr" == "spirt-update: -m: invalid model name \""* ]]
		run -64 spirt-update -m "$n" -t 0
		SPIRT_MODEL=$n run -64 spirt-update -t 0
		run -64 spirt-grad -m "$n" -t 0
		run -64 spirt-eval -m "$n"
		run -64 spirt-init -m "$n" mlp:4-5-3
	done
	run -64 --separate-stderr spirt-update -m x@1 a0.rec
	assert_equal "$stderr" "spirt-update: -m: invalid model name \"x@1\" (1 to 255 of A-Z a-z 0-9 . _ -, not starting with .)"
	run -64 --separate-stderr spirt-update -m "$long" a0.rec
	assert_equal "$stderr" "spirt-update: -m: invalid model name \"$(printf 'a%.0s' $(seq 40))...\" (1 to 255 of A-Z a-z 0-9 . _ -, not starting with .)"
	[ "$(store_digest "$SPIRT_STORE")" = "$before" ]
}

@test "an update that grows the map holds no read transaction across it" {
	# 200000 floats: model and Adam state outgrow a 1 MiB map in one step
	py "np.save('p.npy', np.ones(200000, dtype=np.float32))
np.save('g.npy', np.full(200000, 0.5, dtype=np.float32))"
	export SPIRT_MAPSIZE=64k
	spirt-store import -t 0 model/m@0 p.npy
	spirt-store import -t 0 agg/0 g.npy
	run -0 spirt-store stat
	assert_line 'map_size=1048576'
	# no -t: the step is looked up first, in a read transaction
	run -0 spirt-update -m m --opt sgd -r 0.5
	run -0 spirt-store stat
	refute_line 'map_size=1048576'
	spirt-store export model/m@1 m1.npy
	py "a = np.load('m1.npy'); assert a.shape == (200000,)
assert np.all(a == 0.75), a[:4]"
}

@test "messages: a missing store is named; records count from 0 in every tool" {
	run -66 --separate-stderr spirt-update -s no.db -m m -t 0
	assert_equal "$stderr" 'spirt-update: no.db: No such file or directory'
	run -66 --separate-stderr spirt-agg -s no.db -t 0
	assert_equal "$stderr" 'spirt-agg: no.db: No such file or directory'
	[ ! -e no.db ]
	# the second record of each stream is cut short: "record 1" for all
	seed
	cat a0.rec <(head -c 60 a1.rec) >cut.rec
	cat m0.rec <(head -c 60 a1.rec) >mcut.rec
	trunc='record 1: truncated record'
	run -65 --separate-stderr spirt-agg -o x.rec cut.rec
	assert_equal "$stderr" "spirt-agg: cut.rec: $trunc"
	run -65 --separate-stderr spirt-store inspect cut.rec
	assert_equal "$stderr" "spirt-store: cut.rec: $trunc"
	run -65 --separate-stderr spirt-update -p mcut.rec -o x.rec a0.rec
	assert_equal "$stderr" "spirt-update: mcut.rec: $trunc"
	run -65 --separate-stderr spirt-grad -p mcut.rec -D a0.rec -o x.rec
	assert_equal "$stderr" "spirt-grad: mcut.rec: $trunc"
	[ ! -e x.rec ]
}

@test "-a gagg applies a peer's global aggregate gagg/t, not agg/t" {
	seed
	py "out(rec(G[1], step=0))" >g0.rec
	spirt-store put gagg/0 g0.rec
	run -0 --separate-stderr spirt-update -m m -t 0 -r 0.1 -a gagg
	check model/m@1 'T0 - 0.1 * G[1]'
	# without gagg/t: a missing input (66), named, nothing written
	spirt-store put model/m@5 m0.rec
	before=$(store_digest spirt.db)
	run -66 --separate-stderr spirt-update -m m -t 5 -r 0.1 --agg gagg
	[[ "$stderr" == *"gagg/5: "* ]]
	[ "$(store_digest spirt.db)" = "$before" ]
	run -64 --separate-stderr spirt-update -m m -t 0 -a 'g/x'
	[[ "$stderr" == *'-a: invalid key prefix "g/x"'* ]]
}

@test "a model's state (spirt-model(5)): spirt-agg combines state/<t>/<w> after the gradients by its rule, spirt-update writes mstate@t+1 with model@t+1, or carries mstate@t; bad states change nothing" {
	# model/m@0 with a state of 2 values, 3 workers' gradients and
	# states; the store ref holds the same without any state
	py "out(rec(T0))" >m0.rec
	py "out(rec([5, 6]))" >s0.rec
	for w in 0 1 2; do
		py "out(rec(G[$w % 2] * ($w + 1), origin=$w, samples=4))" >g$w.rec
		py "out(rec([1 + 10 ** $w, -$w], origin=$w))" >st$w.rec
	done
	for s in spirt.db ref; do
		spirt-store -s $s put model/m@0 m0.rec
		for w in 0 1 2; do
			spirt-store -s $s put grad/0/$w g$w.rec
		done
	done
	spirt-store put mstate/m@0 s0.rec
	for w in 0 1 2; do
		spirt-store put state/0/$w st$w.rec
	done
	spirt-agg -q -r median -t 0
	spirt-agg -q -s ref -r median -t 0
	run -0 spirt-store show agg/0
	assert_line 'shape=8'
	spirt-update -m m -t 0 -r 0.1
	spirt-update -s ref -m m -t 0 -r 0.1
	# the weights: the gradients' update alone; the state: the median of
	# the three states, written with model@1
	spirt-store get model/m@1 | cmp - <(spirt-store -s ref get model/m@1)
	spirt-store get mstate/m@1 >s1.rec
	run -0 py 'r = get("s1.rec"); print(r["step"], list(r["a"]))'
	assert_output '1 [11.0, -1.0]'
	run -66 spirt-store -s ref get mstate/m@1
	# gradients without states: the state is carried over
	for w in 0 1 2; do
		py "out(rec(G[$w % 2], step=1, origin=$w, samples=4))" |
		    spirt-store put grad/1/$w
	done
	spirt-agg -q -t 1
	spirt-update -m m -t 1 -r 0.1
	spirt-store get mstate/m@2 >s2.rec
	run -0 py 'r = get("s2.rec"); print(r["step"], list(r["a"]))'
	assert_output '2 [11.0, -1.0]'
	# a state of another size, or of another origin than its key's
	# worker: the step is refused, nothing written
	for w in 0 1; do
		py "out(rec(G[$w], step=2, origin=$w, samples=4))" |
		    spirt-store put grad/2/$w
	done
	py "out(rec([1, 2], step=2, origin=0))" | spirt-store put state/2/0
	py "out(rec([1, 2, 3], step=2, origin=1))" | spirt-store put state/2/1
	before=$(store_digest spirt.db)
	run -65 --separate-stderr spirt-agg -q -t 2
	# (the gradient with its state: 6 + 3 values)
	[[ "$stderr" == *'grad/2/1: 9 values, grad/2/0 has 8: shapes differ' ]]
	[ "$(store_digest spirt.db)" = "$before" ]
	py "out(rec([1, 2], step=2, origin=0))" | spirt-store put state/2/1
	before=$(store_digest spirt.db)
	run -65 --separate-stderr spirt-agg -q -t 2
	[[ "$stderr" == *'state/2/1: step 2 origin 0, not those of grad/2/1' ]]
	[ "$(store_digest spirt.db)" = "$before" ]
	# an aggregate whose state has NaN, or of neither size: refused by
	# spirt-update, nothing written
	py "out(rec(list(G[0]) + [1, float('nan')], step=2))" |
	    spirt-store put agg/2
	before=$(store_digest spirt.db)
	run -65 --separate-stderr spirt-update -m m -t 2
	[[ "$stderr" == *"agg/2: NaN or Inf in the model's state" ]]
	[ "$(store_digest spirt.db)" = "$before" ]
	py "out(rec(list(G[0]) + [1], step=2))" | spirt-store put agg/2
	before=$(store_digest spirt.db)
	run -65 --separate-stderr spirt-update -m m -t 2
	[[ "$stderr" == *'agg/2: 7 values, model/m@2 has 6 and its state more: shapes differ' ]]
	[ "$(store_digest spirt.db)" = "$before" ]
	# --every (spirt-train): the delta carries the state after the
	# change, no mstate version; the outer step writes the state the
	# peers combined with model@t+n
	py "out(rec(list(G[1]) + [7, 8], step=2))" | spirt-store put agg/2
	spirt-update -m m -t 2 -r 0.1 --delta 1
	spirt-store get delta/1 >d1.rec
	run -0 py 'r = get("d1.rec"); print(r["step"], list(r["a"][6:]))'
	assert_output '1 [7.0, 8.0]'
	run -66 spirt-store get mstate/m@3
	py "out(rec(list(G[0]) + [3, 4], step=1))" | spirt-store put gagg/1
	spirt-update -m m -a gagg -t 1 --outer 2
	spirt-store get mstate/m@3 >s3.rec
	run -0 py 'r = get("s3.rec"); print(r["step"], list(r["a"]))'
	assert_output '3 [3.0, 4.0]'
}

@test "warm mean=grad: the mean of grad/<t>/<w> in the update's own transaction: spirt-agg -r mean -P then spirt-update's bits, no agg/<t>; bad requests change nothing" {
	# model/m@0 with a state, three workers' gradients of steps 0-2
	# (values whose float sum depends on its order), states at step 0;
	# the store ref the same
	py "out(rec(T0))" >m0.rec
	py "out(rec([5, 6]))" >s0.rec
	for s in spirt.db ref; do
		spirt-store -s $s put model/m@0 m0.rec
		spirt-store -s $s put mstate/m@0 s0.rec
	done
	for t in 0 1 2; do
		for w in 0 1 2; do
			py "g = np.random.default_rng($t * 3 + $w).standard_normal(6) * [1e4, 1, 1e-4, 3, 7e2, 1e-2]
out(rec(g, step=$t, origin=$w, samples=4, loss=$w + 1))" >g.rec
			spirt-store put grad/$t/$w g.rec
			spirt-store -s ref put grad/$t/$w g.rec
		done
	done
	for w in 0 1 2; do
		py "out(rec([1 + 10 ** $w, -$w], origin=$w))" >st.rec
		spirt-store put state/0/$w st.rec
		spirt-store -s ref put state/0/$w st.rec
	done
	set -- -m m -r 0.1 --opt adam
	for t in 0 1 2; do
		spirt-agg -q -s ref -r mean -P -t $t
		spirt-update -s ref -t $t "$@"
	done
	run -0 --separate-stderr spirt-update -i "$@" <<-EOF2
		0 mean=grad
		0 mean=grad
		1 mean=grad
		2 mean=grad
	EOF2
	assert_line --index 0 'step=0 lr=0.1 count=3 loss=2'
	assert_line --index 1 'step=0 applied=already'
	assert_line --index 3 'step=2 lr=0.1 count=3 loss=2'
	for k in model/m@3 opt/m@3 mstate/m@3; do
		spirt-store get $k | cmp - <(spirt-store -s ref get $k)
	done
	# no aggregate stored, but what it left out, as spirt-agg writes it;
	# the spent steps pruned as -P does
	run -0 sh -c 'spirt-store ls agg/ | cut -f1'
	assert_output "$(printf 'agg/1/excluded\nagg/2/excluded')"
	spirt-store get agg/2/excluded | cmp - <(spirt-store -s ref get agg/2/excluded)
	run -0 spirt-store ls grad/
	assert_line --partial 'grad/1/0'
	refute_line --partial 'grad/0/'
	run -0 spirt-store ls state/
	assert_output ''
	# no gradients: 66; another shape: 65; a bad word or mean= with
	# another word: 64; nothing written; the worst code the exit status
	py "out(rec(G[0], step=3, origin=0))" | spirt-store put grad/3/0
	py "out(rec([1, 2], step=3, origin=1))" | spirt-store put grad/3/1
	before=$(store_digest spirt.db)
	run -66 --separate-stderr spirt-update -i "$@" <<-EOF2
		4 mean=grad
		3 mean=grad
		3 mean=agg
		3 mean=grad delta=3
		3 mean=grad agg=gagg
		3 rule=median
		3 mean=grad rule=cclip
		3 mean=grad rule=trim trim=0.5
		3 mean=slots byzantine=x
	EOF2
	assert_output "$(printf 'step=4 error=66\nstep=3 error=65\nstep=3 error=64\nstep=3 error=64\nstep=3 error=64\nstep=3 error=64\nstep=3 error=64\nstep=3 error=64\nstep=3 error=64')"
	[[ "${stderr_lines[0]}" == 'spirt-update: no gradients for step 4' ]]
	[[ "${stderr_lines[1]}" == 'spirt-update: grad/3/1: 2 values, grad/3/0 has 6: shapes differ' ]]
	[[ "${stderr_lines[2]}" == "spirt-update: stdin:3: mean=: grad or slots, the step's gradients" ]]
	[[ "${stderr_lines[3]}" == *"stdin:4: mean= is the step's aggregate: not with agg=, delta= or outer=" ]]
	[[ "${stderr_lines[4]}" == *"stdin:5: mean= is the step's aggregate"* ]]
	[[ "${stderr_lines[5]}" == *"stdin:6: rule=, trim=, byzantine=, select=, batch=: the fused step's, with mean=" ]]
	[[ "${stderr_lines[6]}" == *"stdin:7: rule=: mean, wmean, trim, median, norm, krum or mkrum (cclip's centre is agg/<t-1>: spirt-agg)" ]]
	[[ "${stderr_lines[7]}" == *"stdin:8: trim=: a fraction from 0 to 0.49999" ]]
	[[ "${stderr_lines[8]}" == *"stdin:9: byzantine=: a count from 0" ]]
	[ "$(store_digest spirt.db)" = "$before" ]
	# a gradient of a past step in the step's keys: left out and named,
	# even with -q, as spirt-agg names it; in agg/<t>/excluded (reason 5)
	py "out(rec(G[1], step=3, origin=1))" | spirt-store put grad/3/1
	py "out(rec(G[0], step=2, origin=2))" | spirt-store put grad/3/2
	run -0 --separate-stderr spirt-update -q -i "$@" <<<'3 mean=grad'
	assert_output 'step=3 lr=0.1 count=2 loss=nan'
	[ "$stderr" = 'spirt-update: grad/3/2: not applied: step 2, a past step (not 3)' ]
	spirt-store get agg/3/excluded >x.rec
	run -0 py 'print(load("x.rec")["a"].tolist())'
	assert_output '[[2, 5]]'
}
