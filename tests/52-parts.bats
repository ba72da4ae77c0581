#!/usr/bin/env bats
# 52-parts: the partitioned exchange (spirt-peer exchange --parts): peers
# by path on one machine (the same gagg/t as all-to-all, a part that is
# not what its owner signed, an owner that does not answer), then three
# peers in namespaces training with it (tests/netns.bash)

load helper
load netns

teardown() {
	netns_teardown
	return 0
}

# m0.rec and a1.rec..a3.rec (N values, samples 32) in stores s1..s3,
# keys p1..p3, a peers file naming them by path (peerstores)
peers3() {
	"$PYTHON" -c "$PYREC
rng = np.random.default_rng(7)
n = ${N:-1001}
open('m0.rec', 'wb').write(st.encode(rng.standard_normal(n).astype(np.float32), name='m:%d' % n, step=0))
for i in (1, 2, 3):
    a = rng.standard_normal(n).astype(np.float32)
    open('a%d.rec' % i, 'wb').write(st.encode(a, name='m:%d' % n, step=0, samples=32))
"
	peerstores 3
}

# (python) import hashlib and struct; vhash(b), the tree hash of a value
# (docs/protocol.md "Values' hashes")
PYVHASH="
import hashlib, struct
def vhash(b):
    h = hashlib.sha256(b'SPIRT-TREE-SHA256' + struct.pack('<QI', len(b), 32768))
    for i in range(0, len(b), 32768):
        h.update(hashlib.sha256(b[i:i + 32768]).digest())
    return h.digest()
"

# round_n T N ARGS...: peers 1..N's round of step T (stores sI, run r1),
# each must succeed
round_n() {
	local t=$1 n=$2 i
	shift 2
	for i in $(seq "$n"); do
		SPIRT_KEY=p$i.key SPIRT_ID=p$i SPIRT_RUN=r1 \
		    spirt-peer exchange -m m -s s$i -t "$t" --deadline 20000 \
		    -P peers "$@" >out$i 2>err$i &
		eval "pid$i=\$!"
	done
	for i in $(seq "$n"); do
		wait "$(eval echo \$pid$i)" || { cat err$i >&2; return 1; }
	done
}

# round3 ARGS...: the three peers' round of step 0, each must succeed
round3() {
	xch 1 "$@"
	xch 2 "$@"
	xch 3 "$@"
	wait $pid1 || { cat err1 >&2; return 1; }
	wait $pid2 || { cat err2 >&2; return 1; }
	wait $pid3 || { cat err3 >&2; return 1; }
}

@test "exchange --parts: three peers combine gagg/t bit for bit as all-to-all does (mean, trim, median)" {
	for rule in mean median "trim --trim 0.34"; do
		rm -rf s1 s2 s3
		peers3
		# (all-to-all: trim 0.34 cuts one of 3, not of 2)
		# shellcheck disable=SC2086
		round3 -P peers -r $rule --min-peers 3
		for i in 1 2 3; do
			spirt-store -s s$i get gagg/0 >all$i.rec
		done
		cmp all1.rec all2.rec
		cmp all1.rec all3.rec
		rm -rf s1 s2 s3
		peers3
		# shellcheck disable=SC2086
		round3 -P peers -r $rule --parts
		for i in 1 2 3; do
			spirt-store -s s$i get gagg/0 >part$i.rec
			cmp all1.rec part$i.rec
		done
		# each peer holds its slices, its input record, its part and
		# its part's signed record; the round says who was in
		run -0 spirt-store -s s2 ls
		assert_line --partial 'xslice/0/p1'
		assert_line --partial 'xslice/0/p3'
		assert_line --partial 'xpart/0/signed'
		run -0 sh -c 'spirt-store -s s1 get gagg/0/round | tr -c "[:print:]\n" " "'
		assert_output --partial 'peer=p2 used'
		assert_output --partial 'peer=p3 used'
	done
	# the parts are cut as documented: 1001 values in 3 parts of 333,
	# 334 and 334 (floor(k n / P)); each slice served with its path (2,
	# 2 and 1 hashes of 32 bytes: RFC 6962's tree of 3 leaves)
	for k in 1:333:2 2:334:2 3:334:1; do
		spirt-store -s s1 get -f xslice/0/p${k%%:*} >sl.rec
		"$PYTHON" -c "$PYREC
import io
b = load('sl.rec')['a'].tobytes()
a = st.read_record(io.BytesIO(b[32 * ${k##*:}:])).array
assert a.shape == ($(echo "$k" | cut -d: -f2),), a.shape
"
	done
	# a second run of a finished round does nothing
	xch 1 -P peers --parts
	wait $pid1
	grep -q 'exchanged already, nothing done' err1
}

@test "exchange --parts: a combined part that is not what its owner signed is refused (65), naming the owner; nothing written" {
	peers3
	cp -r s1 s1.before
	round3 -P peers --parts
	# p2's part changed in its store after it signed it
	spirt-store -s s2 get -f xpart/0 >p2.rec
	"$PYTHON" -c "$PYREC
a = load('p2.rec')['a'].copy()
a[0] += 1
open('bad.rec', 'wb').write(st.encode(a, name='m:1001', step=0, samples=96))
"
	spirt-store -s s2 put xpart/0 bad.rec
	# p1's round again from before it (its slices and part the same
	# bytes: the signatures are deterministic)
	rm -rf s1
	mv s1.before s1
	SPIRT_KEY=p1.key SPIRT_ID=p1 SPIRT_RUN=r1 run -65 --separate-stderr \
	    spirt-peer exchange -m m -s s1 -t 0 -P peers --parts --deadline 5000
	[[ "$stderr" == *"xpart/0 from p2, the owner of part 1 of 3, is not the part its signed record names"* ]]
	run -66 spirt-store -s s1 get gagg/0
}

@test "exchange --parts: a result record whose inputs' hash is not that of the slices the members signed is refused (65), naming the owner; nothing written" {
	peers3
	# round A: p2 signs its part of these inputs
	round3 -P peers --parts
	spirt-store -s s2 get -f xpart/0/signed >resA.rec
	spirt-store -s s2 get -f xpart/0 >partA.rec
	# round B, the same step, members and model, p1's aggregate another
	for i in 1 2 3; do
		rm -rf s$i
	done
	"$PYTHON" -c "$PYREC
a = load('a1.rec')
open('a1.rec', 'wb').write(st.encode(a['a'] * 2, name=a['name'], step=0, samples=32))
"
	peerstores 3
	cp -r s1 s1.before
	round3 -P peers --parts
	# p2 serves round A's record and part: signed by p2, of this round
	# but for its inputs' hash (p1's slice of part 1 was another)
	spirt-store -s s2 put xpart/0/signed resA.rec
	spirt-store -s s2 put xpart/0 partA.rec
	rm -rf s1
	mv s1.before s1
	SPIRT_KEY=p1.key SPIRT_ID=p1 SPIRT_RUN=r1 run -65 --separate-stderr \
	    spirt-peer exchange -m m -s s1 -t 0 -P peers --parts --deadline 5000
	[[ "$stderr" == *"step 0: p2, the owner of part 1, signed it combined inputs other than the slices the members' input records name (its inputs' hash)"* ]] || { echo "$stderr" >&2; false; }
	run -66 spirt-store -s s1 get gagg/0
}

@test "exchange --parts: a slice its member's root does not bind (another slice swapped in, a hash of its path changed) is refused (65), naming the member; nothing written" {
	peers3
	cp -r s1 s1.before
	round3 -P peers --parts
	spirt-store -s s2 get -f xslice/0/p1 >own.rec
	spirt-store -s s2 get -f xslice/0/p2 >other.rec
	# p2 serves p1 its slice of part 1 (leaf 1, with its own path: both
	# 2 hashes long) as the slice of part 0
	spirt-store -s s2 put xslice/0/p1 other.rec
	for what in swapped path; do
		rm -rf s1
		cp -r s1.before s1
		SPIRT_KEY=p1.key SPIRT_ID=p1 SPIRT_RUN=r1 run -65 \
		    --separate-stderr spirt-peer exchange -m m -s s1 -t 0 \
		    -P peers --parts --deadline 5000
		[[ "$stderr" == *"step 0: xslice/0/p1 from p2 is not the slice its signed record names (its path does not reach p2's root)"* ]] || { echo "$what: $stderr" >&2; false; }
		run -66 spirt-store -s s1 get gagg/0
		# the slice of part 0, a byte of its path's first hash changed
		"$PYTHON" -c "$PYREC
b = bytearray(load('own.rec')['a'].tobytes())
b[5] ^= 1
open('path.rec', 'wb').write(st.encode(np.frombuffer(bytes(b), np.uint8), step=0))
"
		spirt-store -s s2 put xslice/0/p1 path.rec
	done
	# as it was: p1's round goes
	spirt-store -s s2 put xslice/0/p1 own.rec
	rm -rf s1
	mv s1.before s1
	SPIRT_KEY=p1.key SPIRT_ID=p1 SPIRT_RUN=r1 run -0 spirt-peer exchange \
	    -m m -s s1 -t 0 -P peers --parts --deadline 5000
	spirt-store -s s1 get gagg/0 | cmp - <(spirt-store -s s2 get gagg/0)
}

@test "exchange --parts: a record of version 2 (an older spirt's) is refused (65), naming the member and both versions; nothing written" {
	peers3
	cp -r s1 s1.before
	round3 -P peers --parts
	# p2's input record under version 2's version byte (its layout was
	# P entries; the byte is read first)
	spirt-store -s s2 get -f xslice/0 >in2.rec
	"$PYTHON" -c "$PYREC
r = bytearray(load('in2.rec')['a'].tobytes())
assert r[:5] == b'SPXP\x03' and r[5] == 1, r[:6]
r[4] = 2
open('v1.rec', 'wb').write(st.encode(np.frombuffer(bytes(r), np.uint8), step=0))
"
	spirt-store -s s2 put xslice/0 v1.rec
	rm -rf s1
	mv s1.before s1
	SPIRT_KEY=p1.key SPIRT_ID=p1 SPIRT_RUN=r1 run -65 --separate-stderr \
	    spirt-peer exchange -m m -s s1 -t 0 -P peers --parts --deadline 5000
	[[ "$stderr" == *"step 0: p2's input record xslice/<t>: record version 2, this peer reads version 3 (a peer of another spirt: docs/protocol.md, \"The partitioned exchange\"): unsupported format version"* ]] || { echo "$stderr" >&2; false; }
	run -66 spirt-store -s s1 get gagg/0
}

@test "exchange --parts: an owner whose part does not come, nor its cover, fails the round (75), naming it; no gagg/t" {
	peers3
	# p2 never gets p3's part, nor p1's cover of it (the link loses
	# them: SPIRT_XDROP)
	SPIRT_XDROP="xpart/0@p3 xpart/0/cover@p1" xch 2 -P peers --parts \
	    --deadline 1500
	xch 1 -P peers --parts --deadline 20000
	xch 3 -P peers --parts --deadline 20000
	rc=0
	wait $pid2 || rc=$?
	[ "$rc" -eq 75 ]
	wait $pid1 && wait $pid3
	grep -q 'step 0: the combined part of p3 not there before the deadline (1500 ms), nor its cover by p1, nothing combined' err2 || { cat err2 >&2; false; }
	grep -q 'peer p3 left out: late: xpart/0' err2
	run -66 spirt-store -s s2 get gagg/0
	# and a member that never comes: no part of its own, no gagg/t
	rm -rf s1 s2 s3
	peers3
	rm -rf s3
	xch 1 -P peers --parts --deadline 800
	xch 2 -P peers --parts --deadline 800
	rc=0
	wait $pid1 || rc=$?
	[ "$rc" -eq 75 ]
	rc=0
	wait $pid2 || rc=$?
	[ "$rc" -eq 75 ]
	grep -q 'step 0: the input record of p3 not there before the deadline (800 ms)' err1
	run -66 spirt-store -s s1 get gagg/0
	run -66 spirt-store -s s1 get xpart/0
}

# stores s1..sN (N=$1) as peers3 does, a peers file naming them
peersn() {
	"$PYTHON" -c "$PYREC
rng = np.random.default_rng(9)
n = 1001
open('m0.rec', 'wb').write(st.encode(rng.standard_normal(n).astype(np.float32), name='m:%d' % n, step=0))
for i in range(1, $1 + 1):
    a = rng.standard_normal(n).astype(np.float32)
    open('a%d.rec' % i, 'wb').write(st.encode(a, name='m:%d' % n, step=0, samples=32))
"
	for i in $(seq "$1"); do
		rm -rf s$i
	done
	peerstores "$1"
}

@test "exchange --parts: an owner stopped mid-round is covered by the next member; every member combines the same gagg/t" {
	# all to all first: what the four must combine
	peersn 4
	for i in 1 2 3 4; do
		xch $i -P peers --min-peers 4
	done
	for i in 1 2 3 4; do
		wait "$(eval echo \$pid$i)" || { cat err$i >&2; return 1; }
	done
	spirt-store -s s1 get gagg/0 >all.rec
	peersn 4
	# p3 (part 2 of 4) stops itself once it pulled its inputs, before it
	# combines its part (SPIRT_XSTOP): p4, next in order, covers it; p1
	# and p2 take p4's cover; all check every part (--check 3
	# --check-parts 4)
	SPIRT_XSTOP=combine xch 3 -P peers --parts --check 3 --check-parts 4 \
	    --deadline 1500
	for i in 1 2 4; do
		xch $i -P peers --parts --check 3 --check-parts 4 \
		    --deadline 1500
	done
	for i in 1 2 4; do
		wait "$(eval echo \$pid$i)" || { cat err$i >&2; kill -9 $pid3; return 1; }
	done
	kill -CONT $pid3
	wait $pid3 || { cat err3 >&2; return 1; }
	for i in 1 2 3 4; do
		spirt-store -s s$i get gagg/0 >part$i.rec
		cmp all.rec part$i.rec
	done
	grep -q 'step 0: peer p3: part 2 of 4 covered by p4 (its part not there before the deadline)' err4
	for i in 1 2; do
		grep -q 'step 0: peer p3: part 2 of 4 covered by p4' err$i
	done
	# p4 signed a cover record (kind 3) for part 2, its signer at 3
	spirt-store -s s4 get -f xpart/0/cover/signed >cov.rec
	"$PYTHON" -c "$PYREC
import struct
r = load('cov.rec')['a'].tobytes()
assert r[:4] == b'SPXP' and r[5] == 3, r[:6]
assert struct.unpack_from('<I', r, 20)[0] == 2 and r[56:58] == b'p4'
"
	# with p3's own slice, which p4 pulled from p3 once p3 was late
	spirt-store -s s3 get -f xslice/0/p3 >sl3.rec
	spirt-store -s s4 get -f xpart/0/cover/slice | cmp - sl3.rec
	# an owner whose part reaches some members and not others: p1 never
	# gets p3's (SPIRT_XDROP), p4 relays the one it got, the same bytes
	peersn 4
	SPIRT_XDROP="xpart/0/signed@p3 xpart/0@p3" xch 1 -P peers --parts \
	    --check 3 --deadline 1500
	for i in 2 3 4; do
		xch $i -P peers --parts --check 3
	done
	for i in 1 2 3 4; do
		wait "$(eval echo \$pid$i)" || { cat err$i >&2; return 1; }
	done
	for i in 1 2 3 4; do
		spirt-store -s s$i get gagg/0 >part$i.rec
		cmp all.rec part$i.rec
	done
	grep -q 'step 0: peer p3: part 2 of 4 relayed by p4' err1
	! grep -q 'covered' err2
	# a relay pulls no slice: the owner's own slice is pulled only when
	# its owner is late for the member after it
	run -66 spirt-store -s s4 get xpart/0/cover/slice
	# an owner late whose own slice does not come either (its store's
	# answer lost): the member after it cannot cover it (75), nor can
	# the others take a cover
	peersn 4
	SPIRT_XSTOP=combine xch 3 -P peers --parts --deadline 1000
	SPIRT_XDROP="xslice/0/p3@p3" xch 4 -P peers --parts --deadline 1000
	xch 1 -P peers --parts --deadline 1000
	xch 2 -P peers --parts --deadline 1000
	for i in 1 2 4; do
		rc=0
		wait "$(eval echo \$pid$i)" || rc=$?
		[ "$rc" -eq 75 ] || { cat err$i >&2; kill -9 $pid3; return 1; }
	done
	kill -9 $pid3
	{ wait $pid3; } 2>/dev/null || :
	grep -q 'step 0: xslice/0/p3, the own slice of p3, not there before the deadline (1000 ms): part 2 of 4 not covered, nothing combined' err4 || { cat err4 >&2; false; }
	grep -q 'step 0: the combined part of p3 not there before the deadline (1000 ms), nor its cover by p4, nothing combined' err1
	run -66 spirt-store -s s4 get gagg/0
	# and a member that is late for the owner and its cover fails (75)
	peersn 4
	SPIRT_XSTOP=combine xch 3 -P peers --parts --deadline 800
	SPIRT_XSTOP=combine xch 4 -P peers --parts --deadline 800
	xch 1 -P peers --parts --deadline 800
	xch 2 -P peers --parts --deadline 800
	for i in 1 2; do
		rc=0
		wait "$(eval echo \$pid$i)" || rc=$?
		[ "$rc" -eq 75 ] || { cat err$i >&2; kill -9 $pid3 $pid4; return 1; }
	done
	kill -9 $pid3 $pid4
	{ wait $pid3 $pid4; } 2>/dev/null || :
	grep -q 'step 0: the combined part of p3 not there before the deadline (800 ms), nor its cover by p4, nothing combined' err1
	run -66 spirt-store -s s1 get gagg/0
}

# the proof on outI (spirt-peer exchange's stdout) that p2 lied about
# part 1: its signed result record and the three input records, in hex;
# checked against the stores' slices and p2's part (signatures are
# checked by every exchange that pulled the records, not here): each
# member's root recomputed from its three slices (RFC 6962's tree, the
# domain bytes of docs/protocol.md), each slice's path
proof_holds() {
	local i k
	for i in 1 2 3; do
		for k in 1 2 3; do
			spirt-store -s s$i get -f xslice/0/p$k >sl$i.$k.rec
		done
		cp sl$i.2.rec sl$i.rec
	done
	spirt-store -s s2 get -f xpart/0 >lie.rec
	"$PYTHON" -c "$PYREC
$PYVHASH
import io
def node(l, r):
    return vhash(b'\x01' + l + r)
def leaf(m, h):
    return vhash(b'\x00' + m.ljust(32, b'\0') + h)
def mth(ls):
    if len(ls) == 1:
        return ls[0]
    m = 1
    while m * 2 < len(ls):
        m *= 2
    return node(mth(ls[:m]), mth(ls[m:]))
def u8(path):
    return load(path)['a'].tobytes()
# leaf k of 3: paths 2, 2 and 1 hashes long
plen = [2, 2, 1]
lines = open('$1').read().split('\n')
assert lines[0].startswith('# step 0: part 1 of 3 combined wrongly by p2'), lines[0]
res = bytes.fromhex(lines[1])
ins = [bytes.fromhex(lines[3 + 2 * i]) for i in range(3)]
ids = [b'p%d' % (i + 1) for i in range(3)]
members = vhash(b''.join(m.ljust(32, b'\0') for m in ids))
# version 3: every record names the members' hash; a result record the
# hash of the input records' signatures: 320 bytes and a token
assert res[:4] == b'SPXP' and res[4] == 3 and res[5] == 2 and struct.unpack_from('<I', res, 20)[0] == 1
assert res[56:58] == b'p2' and len(res) == 320 + struct.unpack_from('<H', res, 6)[0]
sl = [u8('sl%d.rec' % i) for i in (1, 2, 3)]
for i in range(3):
    r = ins[i]
    assert r[4] == 3 and r[5] == 1 and r[56:58] == ids[i] and struct.unpack_from('<I', r, 20)[0] == i
    assert len(r) == 320 + struct.unpack_from('<H', r, 6)[0]
    assert r[192:224] == members
    # member i's root: of the leaves (id k, hash of its slice k's record)
    recs = [u8('sl%d.%d.rec' % (i + 1, k + 1))[32 * plen[k]:] for k in range(3)]
    lv = [leaf(ids[k], vhash(recs[k])) for k in range(3)]
    assert r[224:256] == mth(lv)
    # the slice of part 1 it served: leaf 0 and leaf 2 its path, then
    # its record; the proof carries it as served (the u8 record whole)
    assert sl[i][:64] == lv[0] + lv[2] and sl[i][64:] == recs[1]
    assert node(node(lv[0], leaf(ids[1], vhash(sl[i][64:]))), lv[2]) == r[224:256]
    assert bytes.fromhex(lines[2 + 2 * 3 + 4 + 2 * i + 1]) == open('sl%d.rec' % (i + 1), 'rb').read()
# and p2 signed it combined those: the members' hash, and the hash of the
# three input records' signatures in member order
assert res[192:224] == members
assert res[224:256] == vhash(b''.join(r[-64:] for r in ins))
# p2 signed the part it serves, and it is not the slices' mean
part = open('lie.rec', 'rb').read()
assert res[160:192] == vhash(part)
mean = np.mean([st.read_record(io.BytesIO(x[64:])).array.astype(np.float64) for x in sl], axis=0)
got = load('lie.rec')['a']
assert abs(got[0] - mean[0] - 1) < 1e-4 and np.allclose(got[1:], mean[1:], atol=1e-5)
"
}

@test "exchange --parts --check: an owner that signs a wrong combination is caught by its checkers (65), naming it, with a proof; nothing written" {
	peers3
	allowlist 1 3
	# p2 signs part 1 plus 1 in its first float; p1 and p3 both check
	# every part (--check 2: all the other members; --check-parts 3:
	# every part)
	xch 1 -P peers --parts --check 2 --check-parts 3
	SPIRT_XLIE=1 xch 2 -P peers --parts --check 2 --check-parts 3
	xch 3 -P peers --parts --check 2 --check-parts 3
	# (the liar sees the verdicts against it: 65, caught)
	rc=0
	wait $pid2 || rc=$?
	[ "$rc" -eq 65 ]
	grep -q 'step 0: this peer, the owner of part 1 of 3, signed a combination its signed inputs do not make (its checkers caught it)' err2
	for m in 1 3; do
		rc=0
		wait "$(eval echo \$pid$m)" || rc=$?
		[ "$rc" -eq 65 ]
		grep -q 'step 0: p2, the owner of part 1 of 3, signed a combination its signed inputs do not make (the proof on stdout), nothing combined' err$m
		grep -q 'peer p2 left out: refused: part 1 of 3 combined wrongly' err$m
		run -66 spirt-store -s s$m get gagg/0
		proof_holds out$m
	done
	# the proof checks alone (spirt-peer verify --proof): the records'
	# signatures and members, the slices, the combination again
	run -0 spirt-peer verify --proof out1 -a allow -r r1 -s s1
	assert_output --regexp '^proof holds: step 0: p2, the owner of part 1 of 3, signed xpart/0 = [0-9a-f]{64}; the slices its record names combine to [0-9a-f]{64}$'
	spirt-store -s s1 ls >ls.after
	# forged: a byte of the result record changed (its signature)
	sed '2s/^\(.\{400\}\)./\1f/' out1 >forged1
	cmp -s out1 forged1 && sed '2s/^\(.\{400\}\)./\1e/' out1 >forged1
	run -65 --separate-stderr spirt-peer verify --proof forged1 -a allow -r r1 -s s1
	[[ "$stderr" == *"verify: forged1: line 2: not a result record: "* ]]
	# forged: the same frame around honest p3's part 2 (its record, the
	# slices it combined): they make what p3 signed, no lie
	for i in 1 2 3; do
		spirt-store -s s$i get -f xslice/0/p3 >s3l$i.rec
	done
	spirt-store -s s3 get -f xpart/0/signed >res3.rec
	"$PYTHON" -c "$PYREC
lines = open('out1').read().split('\n')
P = 3
lines[0] = '# step 0: part 2 of 3 combined wrongly by p3 (made up)'
lines[1] = load('res3.rec')['a'].tobytes().hex()
for i in range(P):
    lines[2 + 2 * P + 4 + 2 * i + 1] = open('s3l%d.rec' % (i + 1), 'rb').read().hex()
open('forged2', 'w').write('\n'.join(lines))
"
	run -65 --separate-stderr spirt-peer verify --proof forged2 -a allow -r r1 -s s1
	[[ "$stderr" == *"verify: forged2: not a proof: the slices p3's record names combine to the part it signed"* ]]
	# forged: p1's and p3's slices swapped, or a hash of p1's path
	# changed: neither climbs to its member's root
	"$PYTHON" -c "
lines = open('out1').read().split('\n')
P = 3
a, c = 2 + 2 * P + 4 + 1, 2 + 2 * P + 4 + 2 * 2 + 1
sw = list(lines)
sw[a], sw[c] = lines[c], lines[a]
open('forged3', 'w').write('\n'.join(sw))
b = bytes.fromhex(lines[a])
# a byte of the path's first hash, the u8 record made again around it
import sys
sys.path.insert(0, '$SPIRT_ROOT/contrib/python')
import spirt_tensor as st, io, numpy as np
r = st.read_record(io.BytesIO(b))
p = bytearray(r.array.tobytes())
p[3] ^= 1
lines[a] = st.encode(np.frombuffer(bytes(p), np.uint8), step=r.step).hex()
open('forged4', 'w').write('\n'.join(lines))
"
	for f in forged3 forged4; do
		run -65 --separate-stderr spirt-peer verify --proof $f -a allow -r r1 -s s1
		[[ "$stderr" == *"verify: $f: line $((2 + 2 * 3 + 4 + 2)): the slice of p1 is not the one its record names (its path does not reach its root)"* ]] || { echo "$f: $stderr" >&2; false; }
	done
	# and under a key the allowlist does not know
	printf 'VERSION=1\nTYPE=spirt-allowlist\n%s\nEND\n' "$(grep ' p1$' allow)" >allow1
	run -65 --separate-stderr spirt-peer verify --proof out1 -a allow1 -r r1 -s s1
	[[ "$stderr" == *"verify: out1: line 2: p2's record: "* ]]
	# nothing changed in the store
	spirt-store -s s1 ls | cmp - ls.after
	# one checker a part (the default), every part checked: the one
	# drawn catches it, and its verdict (xpart/0/verdict) makes the
	# other member check part 1 too: both catch it, each with a proof,
	# and neither combines it
	rm -rf s1 s2 s3
	peers3
	xch 1 -P peers --parts --check-parts 3
	SPIRT_XLIE=1 xch 2 -P peers --parts --check-parts 3
	xch 3 -P peers --parts --check-parts 3
	wait $pid2 || :
	for m in 1 3; do
		rc=0
		wait "$(eval echo \$pid$m)" || rc=$?
		[ "$rc" -eq 65 ]
		proof_holds out$m
		run -66 spirt-store -s s$m get gagg/0
	done
	# the drawn checker's verdict names the part, the other's too (it
	# checked it on that word)
	run -0 sh -c 'spirt-store -s s1 get -f xpart/0/verdict; spirt-store -s s3 get -f xpart/0/verdict'
	[ "$(printf '%s\n' "$output" | grep -c 'bad=1')" -ge 1 ]
	# no checker: nobody catches it (what this test adds)
	rm -rf s1 s2 s3
	peers3
	xch 1 -P peers --parts --check 0
	SPIRT_XLIE=1 xch 2 -P peers --parts --check 0
	xch 3 -P peers --parts --check 0
	wait $pid1 && wait $pid2 && wait $pid3
	[ ! -s out1 ] && [ ! -s out3 ]
	run -0 sh -c 'spirt-store -s s1 get gagg/0/round | tr -c "[:print:]\n" " "'
	assert_line 'checked=none'
}

@test "exchange --parts --check: honest owners pass every check under cclip and scclip, two steps (the centre of the last round)" {
	peers3
	"$PYTHON" -c "$PYREC
rng = np.random.default_rng(8)
for i in (1, 2, 3):
    a = rng.standard_normal(1001).astype(np.float32)
    open('b%d.rec' % i, 'wb').write(st.encode(a, name='m:1001', step=1, samples=32))
"
	for rule in cclip scclip; do
		for i in 1 2 3; do
			rm -rf s$i
			spirt-store -s s$i put model/m@0 m0.rec
			spirt-store -s s$i put agg/0 a$i.rec
		done
		for t in 0 1; do
			round_n $t 3 -r $rule --parts --check 2 --check-parts 3
			[ $t = 1 ] && break
			# step 1: the model after step 0 (any, the same on all)
			for i in 1 2 3; do
				spirt-store -s s$i put model/m@1 m0.rec
				spirt-store -s s$i put agg/1 b$i.rec
			done
		done
		for i in 1 2 3; do
			spirt-store -s s$i get gagg/1 >g$i.rec
		done
		cmp g1.rec g2.rec
		cmp g1.rec g3.rec
	done
}

@test "exchange --parts --check-parts: the parts checked each round are drawn from the input records' signatures, the same on every member, another each round" {
	peersn 4
	"$PYTHON" -c "$PYREC
rng = np.random.default_rng(11)
for t in range(8):
    for i in (1, 2, 3, 4):
        a = rng.standard_normal(1001).astype(np.float32)
        open('a%d_%d.rec' % (i, t), 'wb').write(st.encode(a, name='m:1001', step=t, samples=32))
"
	# eight rounds of four members, one part checked (the default)
	for t in 0 1 2 3 4 5 6 7; do
		for i in 1 2 3 4; do
			[ $t = 0 ] || spirt-store -s s$i put model/m@$t m0.rec
			spirt-store -s s$i put agg/$t a${i}_$t.rec
		done
		round_n $t 4 --parts
		for i in 1 2 3 4; do
			spirt-store -s s$i get gagg/$t/round |
			    tr -c '[:print:]\n' ' ' | grep '^checked=' >ck$i.$t
			spirt-store -s s$i get -f xslice/$t >in$i.$t
		done
	done
	# the draw as docs/protocol.md states it: the seed the hash of the
	# four input records' signatures in member order, part k drawn by
	# the hash of the seed, k and 1; every member wrote that part
	"$PYTHON" -c "$PYREC
$PYVHASH
seen = set()
for t in range(8):
    sigs = b''.join(load('in%d.%d' % (i, t))['a'].tobytes()[-64:] for i in (1, 2, 3, 4))
    seed = vhash(sigs)
    v = [struct.unpack('<Q', vhash(seed + struct.pack('<I', k) + b'\x01')[:8])[0] for k in range(4)]
    want = 'checked=%d' % min(range(4), key=lambda k: (v[k], k))
    for i in (1, 2, 3, 4):
        got = open('ck%d.%d' % (i, t)).read().strip()
        assert got == want, (t, i, got, want)
    seen.add(want)
# another each round: the eight rounds did not all draw one part
assert len(seen) > 1, seen
"
	# more parts than members: every part
	"$PYTHON" -c "$PYREC
for i in (1, 2, 3, 4):
    a = load('a%d_7.rec' % i)['a']
    open('a%d_8.rec' % i, 'wb').write(st.encode(a, name='m:1001', step=8, samples=32))
"
	for i in 1 2 3 4; do
		spirt-store -s s$i put model/m@8 m0.rec
		spirt-store -s s$i put agg/8 a${i}_8.rec
	done
	SPIRT_CHECK_PARTS=9 round_n 8 4 --parts
	for i in 1 2 3 4; do
		run -0 sh -c "spirt-store -s s$i get gagg/8/round | tr -c '[:print:]\n' ' '"
		assert_line 'checked=0 1 2 3'
	done
	# fewer than one part: refused
	SPIRT_KEY=p1.key SPIRT_ID=p1 SPIRT_RUN=r1 run -64 --separate-stderr \
	    spirt-peer exchange -m m -s s1 -t 9 -P peers --check-parts 0 --parts
	[[ "$stderr" == *"--check-parts"* ]]
}

@test "exchange --parts: usage" {
	peers3
	SPIRT_KEY=p1.key SPIRT_ID=p1 SPIRT_RUN=r1 run -64 --separate-stderr \
	    spirt-peer exchange -m m -s s1 -t 0 -P peers --parts --beats
	[[ "$stderr" == *"--parts: not with --beats"* ]]
	SPIRT_KEY=p1.key SPIRT_ID=p1 SPIRT_RUN=r1 run -64 --separate-stderr \
	    spirt-peer exchange -m m -s s1 -t 0 -P peers --parts --min-peers 2
	SPIRT_KEY=p1.key SPIRT_ID=p1 SPIRT_RUN=r1 run -64 --separate-stderr \
	    spirt-peer exchange -m m -s s1 -t 0 -P peers --check 1
	[[ "$stderr" == *"--check: only with --parts"* ]]
	SPIRT_KEY=p1.key SPIRT_ID=p1 SPIRT_RUN=r1 run -64 --separate-stderr \
	    spirt-peer exchange -m m -s s1 -t 0 -P peers --check-parts 2
	[[ "$stderr" == *"--check-parts: only with --parts"* ]]
	# verify --proof needs the run, and whom to trust
	echo x >proof
	run -64 --separate-stderr env -u SPIRT_RUN spirt-peer verify --proof proof -g p1.key
	[[ "$stderr" == *"--proof: no run (-r or SPIRT_RUN)"* ]]
	run -64 --separate-stderr env -u SPIRT_GROUP -u SPIRT_ALLOW spirt-peer verify --proof proof -r r1
	# not a proof at all: 65; no such file: 66
	printf 'VERSION=1\nTYPE=spirt-allowlist\nEND\n' >allow
	run -65 --separate-stderr spirt-peer verify --proof proof -a allow -r r1 -s s1
	[[ "$stderr" == *"verify: proof: not a proof (its first line is not \"# step ...\")"* ]]
	run -66 --separate-stderr spirt-peer verify --proof nofile -a allow -r r1 -s s1
}

@test "spirt-train --exchange parts: an owner that lies from step 13 is caught, proven and excluded; the others go on with one model, every sample once an epoch" {
	load coverage
	local steps=30
	smalldata "$BATS_FILE_TMPDIR/data"
	pathpeers 0 2
	allowlist 0 2
	# (epochs of 10 steps: p1 lies mid-epoch 1, SPIRT_XLIE=@13; every
	# part checked each round, SPIRT_CHECK_PARTS, so that it is caught
	# in that round)
	for i in 0 1 2; do
		lie=
		[ $i -ne 1 ] || lie=@13
		SPIRT_KEY=p$i.key SPIRT_ID=p$i SPIRT_RUN=r1 SPIRT_XLIE=$lie \
		    SPIRT_CHECK_PARTS=3 \
		    SPIRT_SAMPLE_LOG=$PWD/log$i timeout 600 \
		    spirt-train -s s$i -n 2 -b 20 -e $((steps / 10)) \
		    --data "$BATS_FILE_TMPDIR/data" --peers peers --peer $i \
		    --steps $steps --eval-every $steps --deadline 60000 \
		    --exchange parts --keep-digests >o$i 2>e$i &
		eval "pid$i=\$!"
	done
	# the liar stops, caught (its own part, proven by the others)
	rc=0
	wait $pid1 || rc=$?
	[ "$rc" -eq 65 ] || { cat e1 >&2; false; }
	grep -q 'this peer, the owner of part 1 of 3, signed a combination its signed inputs do not make' e1
	wait $pid0 || { cat e0 >&2; false; }
	wait $pid2 || { cat e2 >&2; false; }
	# both others proved it at step 13, left it out from there, and
	# gave its workers' samples (2 and 3) to the live ones
	for i in 0 2; do
		grep -q 'step 13: p1, the owner of part 1 of 3, signed a combination its signed inputs do not make' e$i ||
		    { cat e$i >&2; false; }
		grep -q 'step 13: p1 signed a wrong combination of its part, proven (the proof above): it is out of the run' e$i
		grep -q 'step 14: the workers 2 3 of p1: their samples from step 13 go to the live ones' e$i
	done
	# one model, on the two
	[ "$(spirt-store -s s0 get model/mlp@$steps | md5sum)" = \
	    "$(spirt-store -s s2 get model/mlp@$steps | md5sum)" ]
	# the last rounds were of two members
	run -0 sh -c "spirt-store -s s0 get gagg/$((steps - 1))/round | tr -c '[:print:]\n' ' '"
	assert_output --partial 'peer=p2 used'
	refute_output --partial 'peer=p1'
	# every sample once an epoch: p0's, p2's, and p1's before step 13
	coverage "$steps" 10 6 200 log0 log2 log1:0:13
	# the parts' digests: the chain holds from model@0 to model@30 on
	# both, p1 a contributor up to step 12, not from 13 on
	for i in 0 2; do
		run -0 --separate-stderr spirt-peer verify -s s$i -m mlp -a allow
		# (each store holds its own digests: the others' "no digest")
		assert_line --index 12 --regexp '^step 12: holds: model [0-9a-f]{64} \((not )?kept\): p0( \(no digest\))? p1 \(no digest\) p2( \(no digest\))?$'
		assert_line --index 13 --regexp '^step 13: holds: model [0-9a-f]{64} \((not )?kept\): p0( \(no digest\))? p2( \(no digest\))?$'
		assert_line --index 29 --regexp '^step 29: holds: model [0-9a-f]{64} \(kept\): p0( \(no digest\))? p2( \(no digest\))?$'
		assert_line --index 30 "steps 0..29 of run r1: the chain holds, 30 steps: p0 p1 p2"
	done
}

# ---- spirt-train --exchange parts: three peers in namespaces, HTTP ----

STEPS=12
PORT=7071

# train3 NAME MODE RULE [ARGS...]: three peers in namespaces 1..3 train
# the MLP STEPS steps from the same seed and shards, exchanging by MODE
# with RULE (and spirt-train's ARGS), stores NAME1..NAME3
train3() {
	local i pids= n=$1 m=$2 r=$3
	shift 3
	: >peers.$n
	for i in 1 2 3; do
		echo "p$i http://$(netns_addr $i):$PORT" >>peers.$n
		rm -rf "$n$i"
		cp -r base "$n$i"
	done
	for i in 1 2 3; do
		netns_exec $i env SPIRT_KEY="$PWD/p$i.key" \
		    SPIRT_TOKEN="$PWD/p$i.tok" SPIRT_GROUP="$PWD/group.pub" \
		    timeout 600 spirt-train -q -s "$PWD/$n$i" -n 1 -b 16 \
		    --peers "$PWD/peers.$n" --peer $((i - 1)) --steps $STEPS \
		    --eval-every $STEPS --deadline 60000 --exchange "$m" \
		    --peer-rule "$r" "$@" >"o.$n$i" 2>"e.$n$i" &
		pids="$pids $!"
	done
	for i in $pids; do
		wait "$i" || { cat e."$n"* >&2; return 1; }
	done
}

# same_model NAME...: model@STEPS is the same bytes in every store named
same_model() {
	local h s
	h=$(spirt-store -s "${1}1" get model/mlp@$STEPS | md5sum)
	for s in "$@"; do
		for i in 1 2 3; do
			[ "$(spirt-store -s "$s$i" get model/mlp@$STEPS |
			    md5sum)" = "$h" ] || { echo "$s$i differs" >&2
				return 1; }
		done
	done
}

@test "spirt-train --exchange parts: three peers in namespaces train the same model bytes as all-to-all (mean, median; --every 4)" {
	netns_require
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
	netns_setup 3
	netns_peers 3 "$PORT"
	spirt-shard -s base -q -n 3 --seed 1 \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz"
	# (trim: with 3 peers spirt-train checks a rule against the quorum,
	# 2, where no trim cuts one a side; the rounds above test it)
	for rule in mean median; do
		train3 all "all" $rule
		train3 part parts $rule
		same_model all part
		# the parts were exchanged: each peer's part and its signed
		# record of the last round are in its store
		run -0 spirt-store -s part2 ls xpart/
		assert_line --partial 'xpart/'$((STEPS - 1))'/signed'
		run -0 spirt-store -s all2 ls xpart/
		refute_output --partial 'xpart/'
	done
	# rounds every 4 steps exchange the models' change by parts too
	train3 all "all" mean --every 4
	train3 part parts mean --every 4
	same_model all part
	# and parts are refused with --beat (every member owns a part)
	run -64 --separate-stderr spirt-train -s part1 --peers peers.part \
	    --exchange parts --beat 1000
	[[ "$stderr" == *"--exchange parts: not with --beat or --keep-pulls"* ]]
	run -64 spirt-train -s part1 --exchange bogus
	run -64 spirt-train -s part1 --exchange parts
}
