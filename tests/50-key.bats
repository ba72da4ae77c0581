#!/usr/bin/env bats
# 50-key: spirt-key keygen and invite, their options and exit codes, and
# spirt-key keygen and invite, their old spellings

load helper

mode() {
	stat -c %a "$1"
}

# the group key and a member's public key, for the invite tests
keys() {
	spirt-key keygen group.key >group.hex
	spirt-key keygen -p p1.pub p1.key >p1.hex
}

# decode TOKEN FILE and print its fields, one per line (docs/protocol.md)
decode() {
	"$PYTHON" - "$1" <<'EOF'
import struct, sys
lines = open(sys.argv[1]).read().split('\n')
assert lines[0] == 'VERSION=1' and lines[1] == 'TYPE=spirt-token', lines
assert lines[2].startswith('TOKEN=') and lines[3:] == ['END', ''], lines
t = bytes.fromhex(lines[2][6:])
assert len(t) == 216 and t[:5] == b'SPTK\x01' and t[6:8] == b'\0\0'
issued, expires = struct.unpack('<QQ', t[8:24])
s = lambda b: b.rstrip(b'\0').decode()
print('role', t[5])
print('run', s(t[24:56]))
print('id', s(t[56:88]))
print('key', t[88:120].hex())
print('group', t[120:152].hex())
print('life', (expires - issued) // 10**9)
print('issued', issued // 10**9)
EOF
}

@test "keygen writes a 0600 key file and prints its public key" {
	run --separate-stderr spirt-key keygen id.key
	assert_success
	[ -z "$stderr" ]
	[[ "$output" =~ ^[0-9a-f]{64}$ ]]
	[ "$(mode id.key)" = 600 ]
	[ "$(sed -n 1,2p id.key)" = "$(printf 'VERSION=1\nTYPE=spirt-ed25519-secret')" ]
	grep -qx "PUBLIC=$output" id.key
	grep -qx 'SECRET=[0-9a-f]\{64\}' id.key
	# no temporary left behind (bats keeps its separate-stderr-* here)
	[ "$(ls | grep -v '^separate-stderr-')" = id.key ]
}

@test "keygen makes a 0600 key even under umask 000" {
	umask 000
	run spirt-key keygen id.key
	assert_success
	[ "$(mode id.key)" = 600 ]
}

@test "keygen -p also writes the public key file" {
	run spirt-key keygen --public id.pub id.key
	assert_success
	[ "$(mode id.pub)" = 644 ]
	grep -qx "PUBLIC=$output" id.pub
	grep -qx 'TYPE=spirt-ed25519-public' id.pub
	! grep -q SECRET id.pub
}

@test "keygen never replaces a key file (73) unless -f" {
	spirt-key keygen id.key >first
	cp id.key before
	run --separate-stderr spirt-key keygen id.key
	[ "$status" -eq 73 ]
	[ -z "$output" ]
	[[ "$stderr" == "spirt-key: id.key: key file exists (-f replaces it)" ]]
	cmp id.key before
	run spirt-key keygen -f id.key
	assert_success
	[ "$output" != "$(cat first)" ]
	grep -qx "PUBLIC=$output" id.key
	[ "$(mode id.key)" = 600 ]
}

@test "keygen into a missing directory: 73" {
	run --separate-stderr spirt-key keygen no/such/id.key
	[ "$status" -eq 73 ]
	[[ "$stderr" == "spirt-key: no/such/id.key: No such file or directory" ]]
	[ ! -e no ]
}

@test "keygen never writes a secret to standard output: 64" {
	run --separate-stderr spirt-key keygen -
	[ "$status" -eq 64 ]
	[ -z "$output" ]
}

@test "keygen: a failed write of standard output is 74" {
	run bash -c 'spirt-key keygen id.key >/dev/full'
	[ "$status" -eq 74 ]
	[[ "$output" == "spirt-key: stdout: "* ]]
}

@test "usage errors: no command, unknown command, wrong options: 64" {
	run --separate-stderr spirt-key
	[ "$status" -eq 64 ]
	[[ "$stderr" == "usage: spirt-key keygen"* ]]
	run --separate-stderr spirt-key bogus
	[ "$status" -eq 64 ]
	[[ "$stderr" == "spirt-key: bogus: unknown command (keygen or invite)"* ]]
	run --separate-stderr spirt-key -q keygen id.key
	[ "$status" -eq 64 ]
	run --separate-stderr spirt-peer
	[ "$status" -eq 64 ]
	[[ "$stderr" == "usage: spirt-peer serve"* ]]
	run --separate-stderr spirt-peer bogus
	[ "$status" -eq 64 ]
	[[ "$stderr" == "spirt-peer: bogus: unknown command (serve, exchange, verify, catch-up or peers; keygen and invite are spirt-key's)"* ]]
	for args in "keygen" "keygen a b" "keygen -g g.key id.key" \
	    "keygen -r run id.key" "keygen -e 1h id.key" \
	    "keygen -o x id.key" "keygen --bogus id.key" \
	    "invite -g g -i p1 -r r1" "invite -g g -i p1 -r r1 a b" \
	    "invite -f -g g -i p1 -r r1 k" "invite -p x -g g -i p1 -r r1 k" \
	    "invite -i p1 -r r1 k" "invite -g g -r r1 k" "invite -g g -i p1 k" \
	    "keygen -s x.db id.key" "invite -l 1.2.3.4:5 -g g -i p1 -r r1 k"
	do
		run --separate-stderr spirt-key $args
		[ "$status" -eq 64 ] || fail "spirt-key $args: exit $status"
		[ -z "$output" ] || fail "spirt-key $args: stdout $output"
	done
	[ -z "$(ls | grep -v '^separate-stderr-')" ]
}

@test "invite writes a token binding run, id, key, role and expiry" {
	keys
	run --separate-stderr spirt-key invite -g group.key -r fmnist-1 \
	    -i p1 "$(cat p1.hex)"
	assert_success
	[ -z "$stderr" ]
	echo "$output" >tok
	decode tok >fields
	grep -qx 'role 1' fields
	grep -qx 'run fmnist-1' fields
	grep -qx 'id p1' fields
	grep -qx "key $(cat p1.hex)" fields
	grep -qx "group $(cat group.hex)" fields
	grep -qx 'life 86400' fields
	issued=$(sed -n 's/^issued //p' fields)
	now=$(date +%s)
	[ $((now - issued)) -ge 0 ] && [ $((now - issued)) -lt 60 ]
}

@test "invite -R function -e 2h -o FILE, the key from a public key file" {
	keys
	run --separate-stderr spirt-key invite --role function \
	    --expires 2h --output p1.token --group group.key --run r1 \
	    --id p-1.w0-7 p1.pub
	assert_success
	[ -z "$output" ] && [ -z "$stderr" ]
	[ "$(mode p1.token)" = 644 ]
	decode p1.token >fields
	grep -qx 'role 2' fields
	grep -qx 'id p-1.w0-7' fields
	grep -qx "key $(cat p1.hex)" fields
	grep -qx 'life 7200' fields
	run spirt-key invite -e 90s -g group.key -r r1 -i f-7 -o - p1.pub
	assert_success
	echo "$output" >t2
	decode t2 | grep -qx 'life 90'
}

@test "invite refuses a group key that group or others can read: 66" {
	keys
	for m in 644 640 604 660; do
		chmod "$m" group.key
		run --separate-stderr spirt-key invite -g group.key -r r1 \
		    -i p1 -o p1.token p1.pub
		[ "$status" -eq 66 ] || fail "mode $m: exit $status"
		[[ "$stderr" == "spirt-key: group.key: secret key file readable by group or others (chmod 600)"* ]]
		[[ "$stderr" == *"hint: chmod 600 group.key" ]]
		[ ! -e p1.token ]
	done
	chmod 400 group.key
	run spirt-key invite -g group.key -r r1 -i p1 -o p1.token p1.pub
	assert_success
}

@test "invite: a missing group key is 66, a malformed one 65" {
	keys
	run --separate-stderr spirt-key invite -g none.key -r r1 -i p1 p1.pub
	[ "$status" -eq 66 ]
	[[ "$stderr" == "spirt-key: none.key: No such file or directory" ]]
	sed 's/^SECRET=\(.\)/SECRET=f\1/' group.key >bad.key
	chmod 600 bad.key
	run --separate-stderr spirt-key invite -g bad.key -r r1 -i p1 p1.pub
	[ "$status" -eq 65 ]
	[[ "$stderr" == "spirt-key: bad.key: malformed key, token or allowlist file" ]]
	cp p1.pub pub.key
	chmod 600 pub.key
	run spirt-key invite -g pub.key -r r1 -i p1 p1.pub
	[ "$status" -eq 65 ]
	sed 's/^VERSION=1/VERSION=2/' group.key >v2.key
	chmod 600 v2.key
	run --separate-stderr spirt-key invite -g v2.key -r r1 -i p1 p1.pub
	[ "$status" -eq 65 ]
	[[ "$stderr" == *"unsupported format version" ]]
	[ -z "$output" ]
}

@test "invite: the member's key is 64 hex digits or a public key file" {
	keys
	run --separate-stderr spirt-key invite -g group.key -r r1 -i p1 \
	    nosuchfile
	[ "$status" -eq 66 ]
	[[ "$stderr" == "spirt-key: nosuchfile: No such file or directory" ]]
	run spirt-key invite -g group.key -r r1 -i p1 "$(cut -c 2- p1.hex)"
	[ "$status" -eq 66 ]
	sed 's/^PUBLIC=./PUBLIC=/' p1.pub >short.pub
	run --separate-stderr spirt-key invite -g group.key -r r1 -i p1 \
	    short.pub
	[ "$status" -eq 65 ]
	[[ "$stderr" == "spirt-key: short.pub: malformed key, token or allowlist file" ]]
	run spirt-key invite -g group.key -r r1 -i p1 p1.key
	[ "$status" -eq 65 ]
}

@test "invite: bad role, run id, id or duration: 64" {
	keys
	for args in "-R admin" "-e 0" "-e 1d" "-e 87841h" "-e -5s"; do
		run --separate-stderr spirt-key invite $args -g group.key \
		    -r r1 -i p1 -o tok p1.pub
		[ "$status" -eq 64 ] || fail "$args: exit $status"
		[[ "$stderr" == "spirt-key: -"[Re]": "* ]] || fail "$args: $stderr"
	done
	for bad in "" "run 1" ".r" "r/1" "0123456789012345678901234567890123"
	do
		run --separate-stderr spirt-key invite -g group.key -r "$bad" \
		    -i p1 -o tok p1.pub
		[ "$status" -eq 64 ] || fail "-r '$bad': exit $status"
		[[ "$stderr" == "spirt-key: -r: invalid run id"* ]]
		run --separate-stderr spirt-key invite -g group.key -r r1 \
		    -i "$bad" -o tok p1.pub
		[ "$status" -eq 64 ] || fail "-i '$bad': exit $status"
		[[ "$stderr" == "spirt-key: -i: invalid id"* ]]
	done
	[ ! -e tok ]
}

@test "invite: an output that cannot be created is 73, a failed write 74" {
	keys
	run --separate-stderr spirt-key invite -g group.key -r r1 -i p1 \
	    -o no/such/tok p1.pub
	[ "$status" -eq 73 ]
	[[ "$stderr" == "spirt-key: no/such/tok: No such file or directory" ]]
	run bash -c 'spirt-key invite -g group.key -r r1 -i p1 p1.pub \
	    >/dev/full'
	[ "$status" -eq 74 ]
}

@test "spirt-peer keygen and invite, the old spellings, still work" {
	run --separate-stderr spirt-peer keygen -p old.pub old.key
	assert_success
	[[ "$output" =~ ^[0-9a-f]{64}$ ]]
	[ "$(mode old.key)" = 600 ]
	grep -qx "PUBLIC=$output" old.pub
	spirt-key keygen group.key >group.hex
	run --separate-stderr spirt-peer invite -R function -e 2h \
	    -g group.key -r r1 -i p1.w0 -o old.token old.pub
	assert_success
	decode old.token >fields
	grep -qx 'role 2' fields
	grep -qx 'id p1.w0' fields
	grep -qx "group $(cat group.hex)" fields
	grep -qx 'life 7200' fields
	# their refusals and exit codes too, in spirt-peer's words
	run --separate-stderr spirt-peer keygen old.key
	[ "$status" -eq 73 ]
	[[ "$stderr" == "spirt-peer: old.key: key file exists (-f replaces it)" ]]
	run --separate-stderr spirt-peer invite -R function -g group.key \
	    -r r1 -i f1 old.pub
	[ "$status" -eq 64 ]
	[[ "$stderr" == "spirt-peer: -i: function id \"f1\" binds no worker"* ]]
	# options before the command belong to serve: not to these
	run spirt-peer -q keygen x.key
	[ "$status" -eq 64 ]
	[ ! -e x.key ]
}

@test "-h and -V" {
	run spirt-key -h
	assert_success
	[[ "$output" == "usage: spirt-key keygen"* ]]
	[[ "$output" == *"  -R, --role ROLE"* ]]
	run spirt-key invite -h
	assert_success
	[[ "$output" == "usage: spirt-key keygen"* ]]
	run spirt-key -V
	assert_success
	[[ "${lines[0]}" == "spirt-key "* ]]
	[[ "${lines[1]}" == "crypto: "* ]]
	[ "${lines[1]}" = "$(spirt-peer -V | sed -n 2p)" ]
}
