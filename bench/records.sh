#!/bin/bash
# bench/records.sh - the partitioned exchange's records a peer pulls in a
# round, from the stores: for each P of PEERS (default "4 8 16"), one
# round of step 0 (spirt-peer exchange --parts) of P peers on this host,
# by path, each with a member token of one group (N = 216, as over
# HTTP), a vector of 4003 floats; then the sizes of the input record
# xslice/0 and the result record xpart/0/signed each member signed (u8
# payload bytes, as spirt-store ls says), summed over the P - 1 members
# other than p1: the records' bytes p1 pulls in a round (docs/scale.md,
# "What goes beyond the payload"; docs/protocol.md "Bytes"); and, since
# the records' version 3, what the slices p1 pulls (xslice/0/p1 of each
# other member) carry beyond their tensor record: the path and the u8
# record's head and checksum ("paths").  Sizes, not times: the load does
# not change them.  (Run with the binaries of version 2, whose slices
# are tensor records, paths= says 0.)
#   bash bench/records.sh   (after make all)
set -eu
cd "$(dirname "$0")/.."
root=$PWD
PATH="$root:$PATH"
export PATH
unset SPIRT_STORE SPIRT_KEY SPIRT_TOKEN SPIRT_GROUP SPIRT_ALLOW
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for P in ${PEERS:-4 8 16}; do
	d=$tmp/$P
	mkdir -p "$d"
	(
	cd "$d"
	/usr/bin/python3 -c "
import sys
sys.path.insert(0, '$root/contrib/python')
import numpy as np, spirt_tensor as st
rng = np.random.default_rng(1)
n = 4003
open('m0.rec', 'wb').write(st.encode(rng.standard_normal(n).astype(np.float32), name='m:%d' % n, step=0))
for i in range(1, $P + 1):
    open('a%d.rec' % i, 'wb').write(st.encode(rng.standard_normal(n).astype(np.float32), name='m:%d' % n, step=0, samples=32))
"
	spirt-key keygen -p group.pub group.key >/dev/null
	: >peers
	for i in $(seq "$P"); do
		spirt-key keygen p$i.key >p$i.hex
		spirt-key invite -o p$i.tok -g group.key -i p$i -r r1 \
		    "$(cat p$i.hex)" >/dev/null
		spirt-store -s s$i put model/m@0 m0.rec
		spirt-store -s s$i put agg/0 a$i.rec
		echo "p$i $PWD/s$i" >>peers
	done
	for i in $(seq "$P"); do
		SPIRT_KEY=p$i.key SPIRT_TOKEN=p$i.tok SPIRT_GROUP=group.pub \
		    SPIRT_ID=p$i SPIRT_RUN=r1 spirt-peer exchange -q -m m \
		    -s s$i -t 0 --deadline 60000 -P peers --parts \
		    >out$i 2>err$i &
	done
	rc=0
	for i in $(seq "$P"); do
		wait -n || rc=$?
	done
	[ "$rc" -eq 0 ] || { cat err* >&2; exit "$rc"; }
	size() {        # size I KEY: the u8 payload bytes of KEY in sI
		spirt-store -s s$1 ls "$2" | awk -v k="$2" '$1 == k { print $3 }'
	}
	# over: the bytes of slice xslice/0/p1 of sI beyond its tensor
	# record (the value whole, less the record inside: 0 when it is
	# the tensor record itself)
	over() {
		spirt-store -s s$1 get -f xslice/0/p1 >sl.rec
		/usr/bin/python3 -c "
import io, sys
sys.path.insert(0, '$root/contrib/python')
import spirt_tensor as st
b = open('sl.rec', 'rb').read()
r = st.read_record(io.BytesIO(b))
if r.array.dtype.name != 'uint8':
    print(0)
else:
    p = r.array.tobytes()
    # the path's 32-byte hashes before the f32 record inside
    for d in range(0, 10):
        f = io.BytesIO(p[32 * d:])
        try:
            t = st.read_record(f)
        except Exception:
            continue
        if t.array.dtype.name == 'float32' and f.tell() == len(p) - 32 * d:
            print(len(b) - (len(p) - 32 * d))
            break
    else:
        sys.exit('no record inside ' + 'sl.rec')
"
	}
	ins=0 res=0 paths=0
	for i in $(seq 2 "$P"); do
		ins=$((ins + $(size $i xslice/0)))
		res=$((res + $(size $i xpart/0/signed)))
		paths=$((paths + $(over $i)))
	done
	echo "bench/records: P=$P input=$(size 2 xslice/0)" \
	    "result=$(size 2 xpart/0/signed) pulled: inputs=$ins" \
	    "results=$res records=$((ins + res)) paths=$paths" \
	    "all=$((ins + res + paths))"
	)
done
