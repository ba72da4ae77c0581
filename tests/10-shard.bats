#!/usr/bin/env bats
# 10-shard: spirt-shard reads IDX, CSV and LIBSVM, shards them in the store
# in the documented order, rebalances, prints stats, and refuses bad input
# with one message, the documented exit code and the store unchanged.
# Fixtures: contrib/python/make_shard_fixtures.py.

load helper

SH="$DATA/shard"
IMG="$SH/tiny-images-idx3-ubyte"
LAB="$SH/tiny-labels-idx1-ubyte"

# digest STORE: hash of every key and value.  (helper.bash's store_digest
# runs mdb_dump -n -a, which fails on a store directory and hashes nothing.)
digest() {
	local d
	d=$(mdb_dump "$1") || fail "mdb_dump $1 failed"
	printf '%s\n' "$d" | md5sum
}

# an existing store, so "unchanged" means something
seed_store() {
	spirt-shard -n 2 "$IMG" "$LAB"
	before=$(digest "$SPIRT_STORE")
}

unchanged() {
	[ "$(digest "$SPIRT_STORE")" = "$before" ] ||
		fail "the store changed"
}

# shard_col KEY: the first pixel of every sample of KEY (image i starts at
# i*10 % 256), or every label, as one line
shard_col() {
	spirt-store export "$1" "$BATS_TEST_TMPDIR/c.npy" &&
	"$PYTHON" -c "
import numpy as np
a = np.load('$BATS_TEST_TMPDIR/c.npy')
v = a.reshape(a.shape[0], -1)[:, 0] if a.ndim > 1 else a
print(' '.join(str(int(x)) for x in v))"
}

@test "usage: no operand, too many, bad values exit 64" {
	run -64 --separate-stderr spirt-shard
	assert_output ''
	[[ "$stderr" == "usage: spirt-shard"* ]]
	run -64 spirt-shard a b c
	run -64 spirt-shard --dead 1 "$IMG" "$LAB"
	run -64 --separate-stderr spirt-shard -n 0 "$IMG" "$LAB"
	[[ "$stderr" == *"-n"* ]]
	run -64 spirt-shard -n x "$IMG" "$LAB"
	run -64 spirt-shard --seed -1 "$IMG" "$LAB"
	run -64 spirt-shard --classes 0 "$IMG" "$LAB"
	run -64 spirt-shard --dim 0 "$SH/tiny.svm"
	run -64 spirt-shard --label-col 0 "$SH/tiny.csv"
	run -64 spirt-shard --dead -3
	run -64 spirt-shard --live 1 "$IMG" "$LAB"
	run -64 spirt-shard -t 3 "$IMG" "$LAB"
	run -64 spirt-shard --group 2 --stats
	run -64 --separate-stderr spirt-shard -f parquet "$SH/tiny.csv"
	assert_equal "$stderr" 'spirt-shard: -f: unknown format "parquet" (idx, csv, libsvm, npy, npz)'
	run -64 --separate-stderr spirt-shard -d a/b "$IMG" "$LAB"
	assert_equal "$stderr" 'spirt-shard: -d: invalid data set name "a/b"'
	[ ! -e "$SPIRT_STORE" ]
}

@test "-h, -V" {
	run -0 --separate-stderr spirt-shard -h
	assert_line --index 0 --partial 'usage: spirt-shard [-Hqv]'
	assert_line --partial '--label-col COL'
	run -0 spirt-shard -V
	assert_output --regexp '^spirt-shard [0-9]+\.[0-9]+\.[0-9]+'
}

@test "IDX: layout, info, stats of the tiny set" {
	run -0 --separate-stderr spirt-shard -n 3 --seed 7 "$IMG" "$LAB"
	assert_output ''
	assert_equal "$stderr" ''
	run -0 spirt-store ls data/
	assert_output "$(printf '%s\n' \
	    "data/train/0/x	u8	4x1x4x3	48	-	-" \
	    "data/train/0/y	i32	4	16	-	-" \
	    "data/train/1/x	u8	3x1x4x3	36	-	-" \
	    "data/train/1/y	i32	3	12	-	-" \
	    "data/train/2/x	u8	3x1x4x3	36	-	-" \
	    "data/train/2/y	i32	3	12	-	-" \
	    "data/train/assign	i64	3x7	168	0	-" \
	    "data/train/info	i64	4	32	-	-")"
	run -0 spirt-store show data/train/0/x
	assert_line 'name=train'
	assert_line 'samples=4'
	run -0 spirt-store export data/train/info info.npy
	run -0 "$PYTHON" -c "import numpy as np; print(np.load('info.npy'))"
	assert_output '[ 3 10  3 12]'
	run -0 --separate-stderr spirt-shard --stats
	assert_output "$(printf '%s\n' \
	    'dataset train samples 10 classes 3 features 12 dtype u8 shape 1x4x3 shards 3 revision 0' \
	    'shard 0 samples 4 hist 3 0 1' \
	    'shard 1 samples 3 hist 0 2 1' \
	    'shard 2 samples 3 hist 1 1 1' \
	    'total samples 10 hist 4 3 3' \
	    'assign worker 0 shard 0 start 0 count 4 epoch 0 step 0' \
	    'assign worker 1 shard 1 start 0 count 3 epoch 0 step 0' \
	    'assign worker 2 shard 2 start 0 count 3 epoch 0 step 0')"
}

@test "shuffle: the documented order (reference from Python)" {
	spirt-shard -n 3 --seed 7 "$IMG.gz" "$LAB.gz"
	for k in 0 1 2; do
		run -0 shard_col "data/train/$k/x"
		want=$(sed -n "s/^shard $k: //p" "$SH/tiny.n3.seed7.exp")
		# pixel 0 of image i is i*10
		assert_output "$(for i in $want; do printf '%s ' $((i * 10)); done | sed 's/ $//')"
		run -0 shard_col "data/train/$k/y"
		assert_output "$(sed -n "s/^labels $k: //p" "$SH/tiny.n3.seed7.exp")"
	done
}

@test "--no-shuffle keeps file order; with --seed it is a usage error" {
	run -0 spirt-shard -n 2 --no-shuffle "$SH/tiny-nohdr.csv"
	run -0 shard_col data/train/0/x
	assert_output '0 1 2'
	run -0 shard_col data/train/1/x
	assert_output '3 4 5'
	run -0 shard_col data/train/1/y
	assert_output '1 0 1'
	run -0 spirt-shard -n 3 --no-shuffle -d img "$IMG" "$LAB"
	run -0 shard_col data/img/2/x
	assert_output '70 80 90'
	run -0 spirt-shard -n 3 --no-shuffle -d img -o d.spt "$IMG" "$LAB"
	for k in 0 1 2; do
		spirt-store get data/img/$k/x
		spirt-store get data/img/$k/y
	done | cmp - d.spt
	before=$(digest "$SPIRT_STORE")
	run -64 --separate-stderr spirt-shard --no-shuffle --seed 3 "$IMG" "$LAB"
	assert_equal "$stderr" 'spirt-shard: --seed: nothing to shuffle with --no-shuffle'
	unchanged
}

@test "--standardise: training mean and deviation, kept for the test set" {
	"$PYTHON" -c "
import numpy as np
r = np.random.default_rng(3)
for name, n in (('train', 50), ('test', 20)):
    x = r.normal([5, -2, 0.01, 7], [3, 0.5, 0.001, 0], size=(n, 4))
    y = r.integers(0, 3, n)
    np.savetxt(name + '.csv', np.column_stack([y, x]), delimiter=',',
               fmt=['%d'] + ['%.9g'] * 4)"
	run -0 --separate-stderr spirt-shard -n 2 --no-shuffle --standardise train.csv
	assert_equal "$stderr" ''
	run -0 spirt-shard -d test --classes 3 --no-shuffle \
	    --standardise-from train test.csv
	spirt-store export data/train/scale scale.npy
	spirt-store export data/train/0/x x0.npy
	spirt-store export data/train/1/x x1.npy
	spirt-store export data/test/0/x t.npy
	spirt-store export data/test/scale tscale.npy
	run -0 spirt-store show data/test/scale
	assert_line 'name=train'
	assert_line 'shape=2x4'
	# reference: numpy in float64 on the files, population deviation,
	# 1 for the constant feature
	run -0 "$PYTHON" -c "
import numpy as np
a = np.loadtxt('train.csv', delimiter=',')[:, 1:]
b = np.loadtxt('test.csv', delimiter=',')[:, 1:]
m, s = a.mean(0), a.std(0)
s[s == 0] = 1
sc = np.load('scale.npy')
x = np.concatenate([np.load('x0.npy'), np.load('x1.npy')])
t = np.load('t.npy')
ms, ss = sc[0].astype(np.float64), sc[1].astype(np.float64)
print(sc.dtype, sc.shape, (np.load('tscale.npy') == sc).all())
print(np.abs(sc[0] - m).max() <= 1e-6 * np.abs(m).max(),
      (np.abs(sc[1] - s) <= 1e-6 * s).all(), sc[1][3])
print(np.abs(x - (a - ms) / ss).max() < 1e-5,
      np.abs(t - (b - ms) / ss).max() < 1e-5)
print(np.round(x.mean(0), 5) + 0, np.round(x.std(0), 5))"
	assert_output "$(printf '%s\n' 'float32 (2, 4) True' 'True True 1.0' \
	    'True True' '[0. 0. 0. 0.] [1. 1. 1. 0.]')"
	# u8 images become f32
	run -0 spirt-shard -d img --standardise "$IMG" "$LAB"
	run -0 bash -c 'spirt-shard -d img --stats | head -n 1'
	assert_output --partial 'dtype f32 shape 1x4x3'
}

@test "--standardise: bad uses exit 64, 65 or 66 and change nothing" {
	printf '0,1,2\n1,2,4\n' > a.csv
	printf '0,1\n1,2\n' > narrow.csv
	run -66 --separate-stderr spirt-shard --standardise-from train a.csv
	[ ! -e "$SPIRT_STORE" ]
	seed_store
	run -66 --separate-stderr spirt-shard -d t --standardise-from train a.csv
	assert_equal "$stderr" "spirt-shard: $SPIRT_STORE: data/train/scale: no such key
spirt-shard: hint: shard train with --standardise first"
	unchanged
	spirt-shard -d a --standardise a.csv
	before=$(digest "$SPIRT_STORE")
	run -65 --separate-stderr spirt-shard -d t --standardise-from a narrow.csv
	assert_equal "$stderr" "spirt-shard: $SPIRT_STORE: data/a/scale: not the mean and deviation of 1 features"
	printf '0,3e38,2\n1,2,4\n' > far.csv
	run -65 --separate-stderr spirt-shard -d t --standardise-from a far.csv
	assert_equal "$stderr" "spirt-shard: far.csv: record 0: feature 1 standardised to 6e+38, not a finite f32"
	unchanged
	run -64 spirt-shard --standardise --standardise-from a a.csv
	run -64 spirt-shard --standardise-from a/b a.csv
	run -64 spirt-shard --standardise --stats
	run -64 --separate-stderr spirt-shard -o d.spt --standardise a.csv
	assert_equal "$stderr" 'spirt-shard: -o: --stats, --list, --holders, --dead, --live and --standardise work on the store'
	run -64 spirt-shard -o d.spt --standardise-from a a.csv
	[ ! -e d.spt ]
	unchanged
}

# mixed_csv: train.csv and test.csv as a user has them: a header, an id,
# features of very different scales, a text column, a quoted species name
# last (numpy writes them; the reference below reads them with the csv
# module, independently of spirt's reader)
mixed_csv() {
	"$PYTHON" -c "
import numpy as np
r = np.random.default_rng(7)
sp = np.array(['setosa', 'versicolor', 'virginica'])
for name, n, k in (('train', 40, 3), ('test', 12, 2)):
    with open(name + '.csv', 'w') as f:
        f.write('id,length,width,colour,mass,age,species\n')
        for i in range(n):
            c = r.integers(0, k)
            x = r.normal([5 + 2 * c, 0.3, 1200 * (c + 1), 40],
                         [0.5, 0.05, 150, 10])
            f.write('%d,%.6g,%.6g,%s,%.6g,%.6g,\"%s\"\n' % (i, x[0], x[1],
                    ('red', 'blue')[i % 2], x[2], x[3], sp[::-1][c]))
"
}

@test "CSV of mixed scales: --columns, --label-names, --standardise; the test set mapped and scaled as the training set (numpy/csv reference)" {
	mixed_csv
	run -0 --separate-stderr spirt-shard -n 2 --no-shuffle --columns 2,3,5-6 \
	    --label-col last --label-names --standardise train.csv
	assert_equal "$stderr" ''
	run -0 spirt-shard -d test --no-shuffle --columns 2,3,5-6 \
	    --label-col last --label-names-from train --standardise-from train \
	    test.csv
	run -0 spirt-shard --stats
	assert_line 'class 0 setosa'
	assert_line 'class 1 versicolor'
	assert_line 'class 2 virginica'
	assert_line --regexp '^dataset train samples 40 classes 3 features 4 dtype f32 '
	# the test set has the training set's three classes and names, and
	# only two of them in its rows
	run -0 spirt-shard -d test --stats
	assert_line --regexp '^dataset test samples 12 classes 3 features 4 '
	assert_line 'class 2 virginica'
	run -0 spirt-store show data/test/classes
	assert_line 'name=test'
	for k in data/train/0/x data/train/1/x data/test/0/x data/train/0/y \
	    data/train/1/y data/test/0/y data/train/classes; do
		spirt-store export "$k" "$(echo "$k" | tr / _).npy"
	done
	run -0 "$PYTHON" -c "
import csv
import numpy as np
def read(name):
    rows = list(csv.reader(open(name + '.csv')))[1:]
    x = np.array([[float(r[j]) for j in (1, 2, 4, 5)] for r in rows])
    return x, [r[6] for r in rows]
a, la = read('train')
b, lb = read('test')
names = sorted(set(la))
m, s = a.mean(0), a.std(0)
x = np.concatenate([np.load('data_train_0_x.npy'), np.load('data_train_1_x.npy')])
y = np.concatenate([np.load('data_train_0_y.npy'), np.load('data_train_1_y.npy')])
t, ty = np.load('data_test_0_x.npy'), np.load('data_test_0_y.npy')
print(bytes(np.load('data_train_classes.npy')).decode().split('\n') == names + [''])
print(list(y) == [names.index(v) for v in la], list(ty) == [names.index(v) for v in lb])
print(np.abs(x - (a - m) / s).max() < 1e-5, np.abs(t - (b - m) / s).max() < 1e-5)"
	assert_output "$(printf '%s\n' True 'True True' 'True True')"
	# and a softmax regression learns it: the features are standardised,
	# so one learning rate fits all four
	spirt-init -m sm softmax:4:3
	for t in $(seq 0 29); do
		spirt-grad -q -m sm -t $t -w 0 -b 20
		spirt-grad -q -m sm -t $t -w 1 -b 20
		spirt-agg -q -t $t
		spirt-update -q -m sm -t $t -r 0.5
	done
	run -0 spirt-eval -m sm -d test
	awk -F= '$1 == "accuracy" { exit !($2 >= 0.9) }' <<<"$output"
}

@test "CSV: a missing value, a text column, an unknown class name: 65 naming file, line and field; nothing written" {
	seed_store
	printf 'y,a,b\n0,1.5,2\n1,NA,3\n' > na.csv
	run -65 --separate-stderr spirt-shard -d t na.csv
	assert_equal "$stderr" 'spirt-shard: na.csv:3: field 2: missing value "NA"'
	printf '0,1.5,2\n1,,3\n' > empty.csv
	run -65 --separate-stderr spirt-shard -d t empty.csv
	assert_equal "$stderr" 'spirt-shard: empty.csv:2: field 2: missing value ""'
	printf '0,1.5,red\n1,2,blue\n' > text.csv
	run -65 --separate-stderr spirt-shard -d t text.csv
	assert_equal "$stderr" 'spirt-shard: text.csv:1: field 3: not a number: "red"
spirt-shard: hint: read only the columns of numbers with --columns (e.g. --columns 2-5)'
	printf '1.5,2,cat\n2,3,dog\n' > names.csv
	run -65 --separate-stderr spirt-shard -d t --label-col last names.csv
	# (line 1, whose label is not a number, is taken for a header)
	assert_equal "$stderr" 'spirt-shard: names.csv:2: field 3: not a number: "dog"
spirt-shard: hint: labels that are names need --label-names'
	printf '1.5,2,cat\n2,3,\n' > nolabel.csv
	run -65 --separate-stderr spirt-shard -d t --label-col last --label-names nolabel.csv
	assert_equal "$stderr" 'spirt-shard: nolabel.csv:2: field 3: missing value "" (no class name)'
	printf '1.5,2,cat\n2,3,cat\n' > one.csv
	run -65 --separate-stderr spirt-shard -d t --label-col last --label-names one.csv
	assert_equal "$stderr" 'spirt-shard: one.csv: every label is "cat": one class, a model needs at least 2'
	unchanged
	spirt-shard -d pets --label-col last --label-names names.csv
	before=$(digest "$SPIRT_STORE")
	printf '1,2,dog\n3,4,cow\n' > cow.csv
	run -65 --separate-stderr spirt-shard -d t --label-col last \
	    --label-names-from pets cow.csv
	assert_equal "$stderr" 'spirt-shard: cow.csv:2: field 3: "cow" is none of the 2 class names'
	unchanged
	# the text column left out, the names read: it shards
	run -0 spirt-shard -d t --columns 1,2 --label-col last --label-names names.csv
}

@test "CSV options: bad lists and combinations exit 64; no class names to take: 66" {
	printf 'id,a,b,y\n1,0.5,2,x\n2,1,3,z\n' > t.csv
	for l in 0 2-1 1,1 2,1-3 a 2, ,2 1-; do
		run -64 --separate-stderr spirt-shard --columns "$l" t.csv
		assert_equal "$stderr" "spirt-shard: --columns: \"$l\": not a list of columns (1-based, as 2-5,7, each once)"
	done
	run -64 --separate-stderr spirt-shard --columns 2,9 --label-col last --label-names t.csv
	assert_equal "$stderr" 'spirt-shard: t.csv:1: no column 9 in 4 fields'
	run -64 --separate-stderr spirt-shard --columns 2-4 --label-col last --label-names t.csv
	assert_equal "$stderr" 'spirt-shard: t.csv:1: column 4 is the label'"'"'s, not a feature'"'"'s'
	run -64 --separate-stderr spirt-shard --classes 3 --columns 2,3 --label-col last --label-names t.csv
	assert_equal "$stderr" 'spirt-shard: t.csv: 2 class names, not --classes 3'
	run -64 --separate-stderr spirt-shard --label-names "$IMG" "$LAB"
	assert_equal "$stderr" "spirt-shard: $IMG: class names and a column list are for CSV only"
	run -64 spirt-shard --columns 2 "$SH/tiny.svm"
	run -64 --separate-stderr spirt-shard -o d.spt --label-names t.csv
	assert_equal "$stderr" 'spirt-shard: -o: --label-names records the names in the store'
	run -64 spirt-shard --label-names --label-names-from train t.csv
	run -64 spirt-shard --label-names-from a/b t.csv
	run -64 spirt-shard --label-names --stats
	[ ! -e "$SPIRT_STORE" ] && [ ! -e d.spt ]
	run -66 spirt-shard --label-names-from train t.csv
	seed_store
	run -66 --separate-stderr spirt-shard -d t --columns 2,3 --label-col last \
	    --label-names-from train t.csv
	assert_equal "$stderr" "spirt-shard: $SPIRT_STORE: data/train/classes: no such key
spirt-shard: hint: shard train with --label-names first"
	unchanged
}

@test "same seed, same store; other seed, other order; gzip = plain" {
	spirt-shard -s a.db -n 2 --seed 5 "$IMG" "$LAB"
	spirt-shard -s b.db -n 2 --seed 5 "$IMG.gz" "$LAB.gz"
	spirt-shard -s c.db -n 2 --seed 6 "$IMG" "$LAB"
	assert_equal "$(digest a.db)" "$(digest b.db)"
	[ "$(digest a.db)" != "$(digest c.db)" ]
	SPIRT_STORE=b.db spirt-shard --seed 5 -n 2 "$IMG" "$LAB"
	assert_equal "$(digest a.db)" "$(digest b.db)"
}

@test "resharding replaces the data set; others stay" {
	spirt-shard -n 5 "$IMG" "$LAB"
	spirt-shard -d test "$IMG" "$LAB"
	spirt-shard -n 2 "$IMG" "$LAB"
	run -0 bash -c 'spirt-store ls data/train/ | cut -f1'
	assert_output "$(printf '%s\n' data/train/0/x data/train/0/y \
	    data/train/1/x data/train/1/y data/train/assign data/train/info)"
	run -0 spirt-store ls data/test/0/x
}

@test "-n larger than the sample count exits 64, store unchanged" {
	seed_store
	run -64 --separate-stderr spirt-shard -n 11 "$IMG" "$LAB"
	assert_equal "$stderr" "spirt-shard: $IMG: 11 shards for 10 samples"
	unchanged
}

@test "--classes: test set; a label outside exits 65 naming the record" {
	run -0 spirt-shard -d test --classes 5 "$IMG" "$LAB"
	run -0 bash -c 'spirt-shard -d test --stats | head -n 1'
	assert_output --partial 'classes 5 features 12'
	seed_store
	run -65 --separate-stderr spirt-shard --classes 2 "$IMG" "$LAB"
	assert_equal "$stderr" "spirt-shard: $LAB: record 2: label 2 outside 0..1"
	unchanged
}

@test "a label beyond the class limit exits 65 naming the line or record" {
	seed_store
	printf 'y,a\n0,1\n2147483647,2\n' > big.csv
	printf '0 1:1\n65536 1:2\n' > big.svm
	"$PYTHON" -c "
import struct
open('big-labels', 'wb').write(struct.pack('>4B11i', 0, 0, 0x0C, 1, 10,
    *[0, 1, 2147483647, 0, 1, 2, 0, 1, 2, 0]))"
	while IFS='|' read -r f msg; do
		run -65 --separate-stderr spirt-shard $f
		assert_equal "$stderr" "spirt-shard: $msg"
		assert_output ''
		unchanged
	done <<EOF
big.csv|big.csv:3: label 2147483647: at most 65536 classes (labels 0..65535)
big.svm|big.svm:2: label 65536: at most 65536 classes (labels 0..65535)
$IMG big-labels|big-labels: record 2: label 2147483647: at most 65536 classes (labels 0..65535)
EOF
	run -64 --separate-stderr spirt-shard --classes 65537 "$IMG" "$LAB"
	unchanged
	# the largest class number is fine, and --stats stays small
	printf '0 1:1\n65535 1:2\n' > max.svm
	run -0 spirt-shard -d max max.svm
	run -0 bash -c 'spirt-shard -d max --stats | head -n 1'
	assert_output --partial 'samples 2 classes 65536 features 1'
}

@test "one class is refused (a model needs two): 65 with a hint, --classes 1 is 64" {
	seed_store
	printf '0,1\n0,2\n0,3\n' > one.csv
	run -65 --separate-stderr spirt-shard one.csv
	assert_equal "$stderr" "spirt-shard: one.csv: every label is 0: one class, a model needs at least 2
spirt-shard: hint: give the number of classes with --classes"
	run -65 spirt-shard -o one.spt one.csv
	[ ! -e one.spt ]
	run -64 --separate-stderr spirt-shard --classes 1 one.csv
	assert_equal "$stderr" 'spirt-shard: --classes: value out of range "1"'
	unchanged
	# a test set that holds one class is fine when it says how many
	run -0 spirt-shard -d test --classes 3 one.csv
	run -0 bash -c 'spirt-shard -d test --stats | head -n 3 | tail -n 1'
	assert_output 'total samples 3 hist 3 0 0'
}

@test "bad IDX input exits 65 with one message, store unchanged" {
	seed_store
	while IFS='|' read -r img lab msg; do
		run -65 --separate-stderr spirt-shard "$SH/$img" "$SH/$lab"
		assert_equal "$stderr" "spirt-shard: $msg"
		assert_output ''
		unchanged
	done <<EOF
trunc-images-idx3-ubyte.gz|tiny-labels-idx1-ubyte|$SH/trunc-images-idx3-ubyte.gz: truncated gzip data
notgzip-images-idx3-ubyte.gz|tiny-labels-idx1-ubyte|$SH/notgzip-images-idx3-ubyte.gz: gzip: invalid code -- missing end-of-block
short-images-idx3-ubyte|tiny-labels-idx1-ubyte|$SH/short-images-idx3-ubyte: record 8: truncated IDX data (header says 10 items of 12 bytes, the file holds 96 bytes)
long-images-idx3-ubyte|tiny-labels-idx1-ubyte|$SH/long-images-idx3-ubyte: data after the last of 10 items
badmagic-images-idx3-ubyte|tiny-labels-idx1-ubyte|$SH/badmagic-images-idx3-ubyte: bad IDX magic 0x08030000
tiny-images-idx3-ubyte|short-labels-idx1-ubyte|$SH/short-labels-idx1-ubyte: 9 labels for 10 images in $SH/tiny-images-idx3-ubyte
tiny-labels-idx1-ubyte|tiny-images-idx3-ubyte|$SH/tiny-images-idx3-ubyte: labels must be integers of rank 1, not rank 3 (images and labels swapped?)
EOF
	# float labels: the message says what is wrong, not the rank
	"$PYTHON" -c "
import struct
open('f-labels', 'wb').write(struct.pack('>4BI10f', 0, 0, 0x0D, 1, 10,
    *range(10)))
open('d-labels', 'wb').write(struct.pack('>4BI10d', 0, 0, 0x0E, 1, 10,
    *range(10)))"
	run -65 --separate-stderr spirt-shard "$IMG" f-labels
	assert_equal "$stderr" 'spirt-shard: f-labels: labels must be integers, not float (IDX type 0x0d)'
	run -65 --separate-stderr spirt-shard "$IMG" d-labels
	assert_equal "$stderr" 'spirt-shard: d-labels: labels must be integers, not double (IDX type 0x0e)'
	unchanged
}

@test "sizes a header claims are checked against the bytes there: 65, not 71" {
	seed_store
	# plain IDX: 100 bytes claiming 4 GiB, and 2^96 bytes
	"$PYTHON" -c "
import struct, gzip
h = struct.pack('>4B3I', 0, 0, 8, 3, 65536, 256, 256) + bytes(100)
open('big-images', 'wb').write(h)
gzip.open('big-images.gz', 'wb').write(h)
open('huge-images', 'wb').write(
    struct.pack('>4B3I', 0, 0, 8, 3, 2**32 - 1, 2**32 - 1, 2**32 - 1)
    + bytes(100))"
	run -65 --separate-stderr spirt-shard big-images "$LAB"
	assert_equal "$stderr" "spirt-shard: big-images: record 0: truncated IDX data (header says 65536 items of 65536 bytes, the file holds 100 bytes)"
	run -65 --separate-stderr spirt-shard huge-images "$LAB"
	assert_equal "$stderr" "spirt-shard: huge-images: record 0: truncated IDX data (header says 4294967295 items of 18446744065119617025 bytes, the file holds 100 bytes)"
	run -65 --separate-stderr spirt-shard big-images.gz "$LAB"
	assert_equal "$stderr" "spirt-shard: big-images.gz: record 0: truncated IDX data (header says 65536 items)"
	unchanged
	# the data set read back: info claiming 2^40 shards, or 2^20 shards
	# of 65536 classes where one exists
	for info in '1 << 40, 1 << 40, 3, 12' '1 << 20, 1 << 20, 65536, 12'; do
		"$PYTHON" -c "$PYREC
out(st.encode(np.array([$info], np.int64), name='train'))" > info.rec
		cp -r "$SPIRT_STORE" bad.db
		spirt-store -s bad.db put data/train/info info.rec
		run -65 --separate-stderr spirt-shard -s bad.db --stats
		assert_equal "$stderr" "spirt-shard: bad.db: stats data/train: malformed input data"
		rm -r bad.db
	done
}

@test "a CSV line of a million fields costs memory for one row, not 1024" {
	ldd "$(command -v spirt-shard)" | grep -q libasan &&
		skip "ulimit -v and ASan do not mix"
	"$PYTHON" -c "print('0,' * 999999 + '1'); print('1,' * 999999 + '0')" > wide.csv
	# (the store's map would not fit either: a data file instead)
	run -0 --separate-stderr bash -c 'ulimit -v 1000000; spirt-shard -o d.spt wide.csv'
	run -0 spirt-store inspect d.spt
	assert_line 'shape=2x999999'
	assert_line 'mean=0.5'
}

@test "IDX of floats is stored f32" {
	run -0 spirt-shard -d f "$SH/float-images-idx3-ubyte" "$LAB"
	run -0 bash -c 'spirt-shard -d f --stats | head -n 1'
	assert_output --partial 'dtype f32 shape 1x4x3'
}

@test "missing input exits 66, store unchanged and not created" {
	run -66 --separate-stderr spirt-shard nosuch "$LAB"
	assert_equal "$stderr" 'spirt-shard: nosuch: No such file or directory'
	[ ! -e "$SPIRT_STORE" ]
	seed_store
	run -66 spirt-shard "$IMG" nosuch
	run -66 spirt-shard nosuch.csv
	unchanged
}

@test "CSV: header or not, gzip, label last, stdin" {
	for f in tiny.csv tiny-nohdr.csv tiny.csv.gz; do
		run -0 spirt-shard -s "$f.db" "$SH/$f"
	done
	spirt-shard -s last.db --label-col last "$SH/tiny-last.csv"
	spirt-shard -s stdin.db -f csv - < "$SH/tiny-nohdr.csv"
	for db in tiny-nohdr.csv.db tiny.csv.gz.db last.db stdin.db; do
		assert_equal "$(digest "$db")" \
		    "$(digest tiny.csv.db)"
	done
	SPIRT_STORE=tiny.csv.db run -0 shard_col data/train/0/y
	assert_output '1 0 1 0 1 0'
	run -0 spirt-store -s tiny.csv.db export data/train/0/x x.npy
	run -0 "$PYTHON" -c "import numpy as np; print(np.load('x.npy')[0])"
	assert_output '[ 3.   1.5 -3. ]'
}

@test "-H skips a title or header line; without it a title is named with a hint" {
	seed_store
	printf 'Iris data, 3 samples\n0,1,2,3\n1,2,3,4\n1,3,4,5\n' > title.csv
	run -65 --separate-stderr spirt-shard title.csv
	assert_equal "$stderr" "spirt-shard: title.csv:2: 4 fields, expected 2 as in the header on line 1
spirt-shard: hint: skip a title line with -H"
	printf 'Iris\n0,1,2,3\n1,2,3,4\n' > title1.csv
	run -65 --separate-stderr spirt-shard title1.csv
	assert_equal "$stderr" "spirt-shard: title1.csv:1: need a label and at least one feature
spirt-shard: hint: skip a title line with -H"
	run -64 --separate-stderr spirt-shard -H "$IMG" "$LAB"
	assert_equal "$stderr" "spirt-shard: $IMG: IDX has no header line"
	unchanged
	run -0 spirt-shard -H -d t title.csv
	run -0 bash -c 'spirt-shard -d t --stats | head -n 1'
	assert_output --partial 'samples 3 classes 2 features 3'
	# a header line skipped with -H or detected: the same data set
	spirt-shard -s a.db "$SH/tiny.csv"
	spirt-shard -s b.db --header "$SH/tiny.csv"
	assert_equal "$(digest a.db)" "$(digest b.db)"
	# -H skips line 1 whatever it holds, and detects nothing after it
	run -0 spirt-shard -s c.db -H "$SH/tiny-nohdr.csv"
	run -0 bash -c 'spirt-shard -s c.db --stats | head -n 1'
	assert_output --partial 'samples 5 classes 2'
	printf 'title\ny,a,b\n0,1,2\n' > two.csv
	run -65 --separate-stderr spirt-shard -H two.csv
	assert_equal "$stderr" 'spirt-shard: two.csv:2: field 1: not a number: "y"'
	# LIBSVM too; IDX has no lines
	printf 'a title\n0 1:1\n1 2:1\n' > t.svm
	run -0 spirt-shard -H -d s t.svm
	run -0 bash -c 'spirt-shard -d s --stats | head -n 1'
	assert_output --partial 'samples 2 classes 2 features 2'
}

@test "bad CSV exits 65 naming file and line, store unchanged" {
	seed_store
	while IFS='|' read -r opt f msg; do
		run -65 --separate-stderr spirt-shard $opt "$SH/$f"
		assert_equal "$stderr" "spirt-shard: $SH/$f$msg"
		unchanged
	done <<'EOF'
|ragged.csv|:4: 2 fields, expected 3
|nonnum.csv|:2: field 3: not a number: "x3"
|badlabel.csv|:2: label 1.5 is not a class number
|inf.csv|:2: field 2: not a finite float: "-inf"
|empty.csv|: no samples
--label-col=9|tiny.csv|:1: no label column 9 in 4 fields
--dim=4|tiny.csv|: 3 features per sample, not 4
EOF
	# a first line with a numeric label is data, not a header
	printf '0,1,x\n1,2,3\n' > typo.csv
	run -65 --separate-stderr spirt-shard typo.csv
	assert_equal "$stderr" 'spirt-shard: typo.csv:1: field 3: not a number: "x"
spirt-shard: hint: read only the columns of numbers with --columns (e.g. --columns 2-5)'
	unchanged
}

@test "LIBSVM: sparse rows densified, --dim" {
	run -0 spirt-shard -d s "$SH/tiny.svm"
	run -0 spirt-store export data/s/0/x x.npy
	run -0 "$PYTHON" -c "
import numpy as np
x = np.load('x.npy'); print(x.shape, sorted(x.sum(axis=1).tolist()))"
	assert_output '(4, 5) [0.0, 0.0, 2.5, 3.0]'
	run -0 bash -c 'spirt-shard -d s --dim 9 -f libsvm - < '"$SH/tiny.svm"' && spirt-shard -d s --stats | head -n 1'
	assert_output --partial 'classes 3 features 9 dtype f32 shape 9'
}

@test "bad LIBSVM exits 65 naming file and line, store unchanged" {
	seed_store
	while IFS='|' read -r opt f msg; do
		run -65 --separate-stderr spirt-shard $opt "$SH/$f"
		assert_equal "$stderr" "spirt-shard: $SH/$f$msg"
		unchanged
	done <<'EOF'
|unsorted.svm|:2: index 2 after 3: indices must ascend
|zero.svm|:1: index 0: indices start at 1
|badtok.svm|:2: bad feature "2=1" (want index:value)
|negative.svm|:2: negative label -1 (labels are 0..classes-1)
--dim=4|tiny.svm|:2: index 5 outside 1..4
--classes=2|tiny.svm|:4: label 2 outside 0..1
EOF
}

@test "LIBSVM: a huge index needs --dim; an index above --dim exits 65" {
	seed_store
	printf '1 1:1 3294967295:1\n' > huge.svm
	run -65 --separate-stderr spirt-shard huge.svm
	assert_equal "$stderr" "spirt-shard: huge.svm:1: index 3294967295 above 65536, the most features inferred
spirt-shard: hint: give the number of features with --dim"
	unchanged
	printf '0 1:1\n1 2:1 65537:2\n' > big.svm
	run -65 --separate-stderr spirt-shard big.svm
	assert_equal "${stderr%%$'\n'*}" "spirt-shard: big.svm:2: index 65537 above 65536, the most features inferred"
	run -65 --separate-stderr spirt-shard --dim 65536 big.svm
	assert_equal "$stderr" "spirt-shard: big.svm:2: index 65537 outside 1..65536"
	run -65 --separate-stderr spirt-shard --dim 100 huge.svm
	assert_equal "$stderr" "spirt-shard: huge.svm:1: index 3294967295 outside 1..100"
	printf '0 1:1 99999999999999999999:1\n' > over.svm
	run -65 --separate-stderr spirt-shard --dim 100 over.svm
	assert_equal "$stderr" "spirt-shard: over.svm:1: index 99999999999999999999 outside 1..100"
	unchanged
	# given the dimension, a large one is fine; 65536 is inferred
	run -0 spirt-shard -d big --dim 65537 big.svm
	run -0 bash -c 'spirt-shard -d big --stats | head -n 1'
	assert_output --partial 'features 65537 dtype f32'
	printf '0 1:1\n1 65536:2\n' > max.svm
	run -0 spirt-shard -d max max.svm
	run -0 bash -c 'spirt-shard -d max --stats | head -n 1'
	assert_output --partial 'features 65536 dtype f32'
}

@test "unknown format exits 64 with a hint" {
	run -64 --separate-stderr spirt-shard "$SH/rng.exp"
	assert_equal "$stderr" "spirt-shard: $SH/rng.exp: cannot tell the format from the name
spirt-shard: hint: name the format with -f"
	run -64 spirt-shard -f csv "$IMG" "$LAB"
	[ ! -e "$SPIRT_STORE" ]
}

@test "--dead spreads a worker's ranges; revision counts" {
	spirt-shard -n 4 "$IMG" "$LAB"
	run -0 --separate-stderr spirt-shard -v --dead 1 --stats
	assert_equal "$stderr" 'spirt-shard: data/train/assign: revision 1 from epoch 0 step 0'
	assert_line --index 0 --partial 'shards 4 revision 1'
	run -0 bash -c 'spirt-shard --stats | grep ^assign'
	assert_output "$(printf '%s\n' \
	    'assign worker 0 shard 0 start 0 count 3 epoch 0 step 0' \
	    'assign worker 0 shard 1 start 0 count 1 epoch 0 step 0' \
	    'assign worker 2 shard 1 start 1 count 1 epoch 0 step 0' \
	    'assign worker 2 shard 2 start 0 count 2 epoch 0 step 0' \
	    'assign worker 3 shard 1 start 2 count 1 epoch 0 step 0' \
	    'assign worker 3 shard 3 start 0 count 2 epoch 0 step 0')"
	# the dead accumulate: 0 and 3 as well leave worker 2
	run -0 bash -c 'spirt-shard --dead 0 --dead 3 --stats | grep ^assign'
	assert_output "$(printf '%s\n' \
	    'assign worker 2 shard 0 start 0 count 3 epoch 0 step 0' \
	    'assign worker 2 shard 1 start 0 count 3 epoch 0 step 0' \
	    'assign worker 2 shard 2 start 0 count 2 epoch 0 step 0' \
	    'assign worker 2 shard 3 start 0 count 2 epoch 0 step 0')"
	# and --live brings them back: the map of the live set alone
	run -0 bash -c 'spirt-shard --live 0-3 --stats | grep ^assign'
	assert_output "$(printf '%s\n' \
	    'assign worker 0 shard 0 start 0 count 3 epoch 0 step 0' \
	    'assign worker 1 shard 1 start 0 count 3 epoch 0 step 0' \
	    'assign worker 2 shard 2 start 0 count 2 epoch 0 step 0' \
	    'assign worker 3 shard 3 start 0 count 2 epoch 0 step 0')"
}

@test "--live -t: from a step on, the rest of its epoch, then the map" {
	# 10 samples in 4 shards (3 3 2 2), batch 1: 2 steps an epoch
	spirt-shard -n 4 "$IMG" "$LAB"
	run -0 --separate-stderr spirt-shard -v --dead 1
	# at step 1 (epoch 0) worker 0 dies too: the half of its list step 0
	# did not take, 2 samples, goes to 2 and 3 for the epoch's last step
	run -0 --separate-stderr spirt-shard -v -t 1 -b 1 --live 2,3 --stats
	assert_equal "$stderr" 'spirt-shard: data/train/assign: revision 2 from epoch 0 step 1'
	run -0 bash -c 'spirt-shard --stats | grep ^assign'
	assert_output "$(printf '%s\n' \
	    'assign worker 2 shard 0 start 2 count 1 epoch 0 step 1 batch 1' \
	    'assign worker 2 shard 2 start 0 count 2 epoch 0 step 1 batch 1' \
	    'assign worker 3 shard 1 start 0 count 1 epoch 0 step 1 batch 1' \
	    'assign worker 3 shard 3 start 0 count 2 epoch 0 step 1 batch 1' \
	    'assign worker 2 shard 0 start 0 count 2 epoch 1 step 0' \
	    'assign worker 2 shard 1 start 0 count 1 epoch 1 step 0' \
	    'assign worker 2 shard 2 start 0 count 2 epoch 1 step 0' \
	    'assign worker 3 shard 0 start 2 count 1 epoch 1 step 0' \
	    'assign worker 3 shard 1 start 1 count 2 epoch 1 step 0' \
	    'assign worker 3 shard 3 start 0 count 2 epoch 1 step 0')"
	# --list: the revision and the same rows, nothing else read
	run -0 --separate-stderr spirt-shard --list
	assert_line --index 0 'revision 2'
	[ "$(spirt-shard --list | sed 1d)" = "$(spirt-shard --stats | grep ^assign)" ]
	run -64 spirt-shard --list "$IMG" "$LAB"
	run -64 spirt-shard -o x --list
	run -66 spirt-shard -d nope --list
	# everyone back from epoch 1: the rest of epoch 0 stays
	run -0 --separate-stderr spirt-shard -v --epoch 1 --live 0,1,2,3
	assert_equal "$stderr" 'spirt-shard: data/train/assign: revision 3 from epoch 1 step 0'
	run -0 bash -c 'spirt-shard --stats | grep ^assign | grep -c "epoch 0 step 1 batch 1"'
	assert_output 4
	run -0 bash -c 'spirt-shard --stats | grep "^assign.* epoch 1 step 0$" | cut -d" " -f3'
	assert_output "$(printf '%s\n' 0 1 2 3)"
}

@test "--holders W,M: one peer's holders of the rest and full parts, the others' of the full part, printed with a reassignment too" {
	# 10 samples in 4 shards (3 3 2 2), batch 1: 2 steps an epoch; two
	# peers of 2 workers each, the first's workers 0 and 1
	spirt-shard -n 4 "$IMG" "$LAB"
	# (no rest part yet)
	run -0 spirt-shard --holders 0,2
	assert_output '0:0:0:0:: 0 1: 2 3:'
	run -0 spirt-shard --holders 2,2
	assert_output '0:0:0:0:: 0 1: 0 1:'
	# worker 1 dies at step 1: its samples go to the first peer's other
	# worker, 0, for the rest of epoch 0 from step 1 and the full part
	# from epoch 1; the line comes with the reassignment
	run -0 --separate-stderr spirt-shard -q -t 1 -b 1 --group 2 \
	    --live 0,2,3 --holders 0,2
	assert_output '1:0:1:1: 0: 0: 2 3:'
	run -0 spirt-shard --holders 2,2
	assert_output '1:0:1:1: 0 1: 0 1: 0: 1'
	spirt-shard --list | grep -q '^assign worker 0 shard 1 .* epoch 1 step 0$'
	# (the rows it reads: those of --list)
	run -0 spirt-shard --holders 0,2 --list
	assert_line --index 0 'revision 1'
	assert_line --index "$((${#lines[@]} - 1))" '1:0:1:1: 0: 0: 2 3:'
	# a peer with none of the rows: empty lists
	run -0 spirt-shard --holders 6,2
	assert_output '1:0:0:0::: 0 2 3: 1'
	for h in '' 0 ,2 0, 0,0 x,1 0,x -1,2; do
		run -64 spirt-shard --holders "$h"
	done
	run -64 spirt-shard --holders 0,2 "$IMG" "$LAB"
	run -64 spirt-shard -o x --holders 0,2
	run -66 spirt-shard -d nope --holders 0,2
}

@test "--live -t --since: the dead took nothing from an earlier step: from it on, to the live" {
	# 10 samples in 4 shards (3 3 2 2), batch 1: 2 steps an epoch; the
	# round of step 0 went without worker 1, as the others learn at step
	# 1: its whole list goes to 0, 2 and 3 for step 1, each keeping the
	# half of its own that step 0 did not take
	spirt-shard -n 4 "$IMG" "$LAB"
	run -0 --separate-stderr spirt-shard -v -t 1 -b 1 --since 0 --live 0,2,3
	assert_equal "$stderr" 'spirt-shard: data/train/assign: revision 1 from epoch 0 step 1'
	run -0 bash -c 'spirt-shard --stats | grep "^assign.* batch 1$"'
	assert_output "$(printf '%s\n' \
	    'assign worker 0 shard 0 start 1 count 2 epoch 0 step 1 batch 1' \
	    'assign worker 0 shard 1 start 0 count 1 epoch 0 step 1 batch 1' \
	    'assign worker 2 shard 1 start 1 count 1 epoch 0 step 1 batch 1' \
	    'assign worker 2 shard 2 start 1 count 1 epoch 0 step 1 batch 1' \
	    'assign worker 3 shard 1 start 2 count 1 epoch 0 step 1 batch 1' \
	    'assign worker 3 shard 3 start 1 count 1 epoch 0 step 1 batch 1')"
	# (without --since: what step 0 did not take of its list only)
	spirt-shard -s t2.db -q -n 4 "$IMG" "$LAB"
	run -0 bash -c 'spirt-shard -s t2.db -t 1 -b 1 --live 0,2,3 &&
	    spirt-shard -s t2.db --stats | grep "^assign.* shard 1 .* batch 1$"'
	assert_output "$(printf '%s\n' \
	    'assign worker 0 shard 1 start 1 count 1 epoch 0 step 1 batch 1' \
	    'assign worker 2 shard 1 start 2 count 1 epoch 0 step 1 batch 1')"
	# a step after -t's, in another epoch, or without -t: 64, unchanged
	before=$(digest "$SPIRT_STORE")
	run -64 --separate-stderr spirt-shard -t 3 -b 1 --since 1 --live 0,2
	assert_equal "$stderr" "spirt-shard: data/train/assign: cannot reassign: step 1 is not in step 3's epoch 1 up to it"
	run -64 spirt-shard -t 1 -b 1 --since 2 --live 0
	run -64 --separate-stderr spirt-shard --since 0 --live 0
	assert_equal "$stderr" "spirt-shard: --since is a step before -t's: give -t"
	run -64 spirt-shard --since 0 --stats
	unchanged
}

@test "--redo -t: a step done again: the revision that held there holds again; history kept, 64 revisions" {
	# 10 samples in 4 shards (3 3 2 2), batch 1: 2 steps an epoch.
	# Revision 1: worker 1 out from epoch 1; revision 2: worker 0 too,
	# from step 3 (epoch 1 step 1); revision 3: all back from epoch 3
	spirt-shard -n 4 "$IMG" "$LAB"
	r0=$(spirt-shard --list | sed 1d)
	spirt-shard -q --epoch 1 --live 0,2,3
	r1=$(spirt-shard --list | sed 1d)
	spirt-shard -q -t 3 -b 1 --live 2,3
	r2=$(spirt-shard --list | sed 1d)
	[ "$(spirt-store ls data/train/assign/ | cut -f1 | tr '\n' ' ')" = "data/train/assign/0 data/train/assign/1 " ]
	# revision 2 holds at step 3 and after: nothing to do
	before=$(digest "$SPIRT_STORE")
	run -0 --separate-stderr spirt-shard -v --redo -t 3 -b 1
	assert_equal "$stderr" 'spirt-shard: data/train/assign: revision 2 holds at step 3: nothing to do'
	run -0 --separate-stderr spirt-shard --redo -t 5 -b 1
	assert_equal "$stderr" ''
	unchanged
	spirt-shard -q --epoch 3 --live 0-3
	# a model back at step 3, mid-epoch: revision 2's rest part holds
	run -0 --separate-stderr spirt-shard --redo -t 3 -b 1
	assert_equal "$stderr" 'spirt-shard: warning: data/train/assign: step 3 is done again: revision 4, as revision 2 held there'
	[ "$(spirt-shard --list | sed 1d)" = "$r2" ]
	# back at epoch 1's first step: the map from epoch 1 is refused
	# (that epoch is under way in revision 4's timeline) until the step
	# is said to be done again; then revision 1's rows hold
	before=$(digest "$SPIRT_STORE")
	run -65 spirt-shard --epoch 1 --live 0,2,3
	unchanged
	run -0 --separate-stderr spirt-shard --redo -t 2 -b 1
	assert_equal "$stderr" 'spirt-shard: warning: data/train/assign: step 2 is done again: revision 5, as revision 1 held there'
	run -0 spirt-shard --list
	assert_line --index 0 'revision 5'
	[ "$(spirt-shard --list | sed 1d)" = "$r1" ]
	run -0 spirt-shard -q --epoch 1 --live 0,1,2,3
	# back at step 0: revision 0's rows, past revisions 6 to 1
	run -0 --separate-stderr spirt-shard -q --redo -t 0 -b 1
	assert_equal "$stderr" ''
	run -0 spirt-shard --list
	assert_line --index 0 'revision 7'
	[ "$(spirt-shard --list | sed 1d)" = "$r0" ]
	# bad settings: 64, nothing changes
	before=$(digest "$SPIRT_STORE")
	run -64 --separate-stderr spirt-shard --redo
	assert_equal "$stderr" 'spirt-shard: --redo: give the step done again with -t'
	for o in '--live 0' '--dead 0' '--since 1' '--group 2'; do
		run -64 --separate-stderr spirt-shard --redo -t 3 -b 1 $o
		assert_equal "$stderr" 'spirt-shard: --redo: the revision of a step already taken holds again: no --live, --dead, --epoch, --since or --group'
	done
	unchanged
	# the newest 64 revisions are kept: with revisions 0 and 7 gone, no
	# kept one holds at step 0 (65, nothing changes)
	for i in $(seq 57); do spirt-shard -q --epoch 1 --live 0-3; done
	run -0 spirt-shard --list
	assert_line --index 0 'revision 64'
	[ "$(spirt-store ls data/train/assign/ | wc -l)" -eq 64 ]
	for i in $(seq 8); do spirt-shard -q --epoch 1 --live 0-3; done
	[ "$(spirt-store ls data/train/assign/ | wc -l)" -eq 64 ]
	[ "$(spirt-store ls data/train/assign/ | cut -f1 | sed 's,.*/,,' | sort -n | sed -n '1p;$p' | tr '\n' ' ')" = "8 71 " ]
	before=$(digest "$SPIRT_STORE")
	run -65 --separate-stderr spirt-shard --redo -t 0 -b 1
	assert_equal "$stderr" 'spirt-shard: data/train/assign: cannot reassign: no kept revision holds at step 0 (epoch 0 step 0): revision 72 begins after it'
	unchanged
	# a data set written again drops the kept revisions with the rest
	spirt-shard -q -n 4 "$IMG" "$LAB"
	[ -z "$(spirt-store ls data/train/assign/)" ]
}

@test "--group: a dead function's shard stays with its peer; a dead peer's goes to the others" {
	# 12 rows, 6 shards of 2, peers {0,1,2} {3,4,5}
	for i in $(seq 0 11); do echo "$((i % 2)),$i"; done >t.csv
	spirt-shard -q -n 6 --no-shuffle t.csv
	run -0 bash -c 'spirt-shard --group 3 --dead 1 --stats | grep "^assign.* shard 1 "'
	assert_output "$(printf '%s\n' \
	    'assign worker 0 shard 1 start 0 count 1 epoch 0 step 0' \
	    'assign worker 2 shard 1 start 1 count 1 epoch 0 step 0')"
	run -0 bash -c 'spirt-shard --group 3 --live 0,1,2 --stats | grep "^assign" | awk "\$3 > 2"'
	assert_output ''
	run -0 bash -c 'spirt-shard --stats | grep -c "^assign worker [0-2] shard [3-5] "'
	assert_output 6
}

@test "--dead: nothing to do warns, exit 0; last worker exits 64" {
	seed_store
	run -0 --separate-stderr spirt-shard --dead 7
	assert_equal "$stderr" 'spirt-shard: warning: data/train/assign: no dead worker is live: nothing to do'
	run -0 --separate-stderr spirt-shard -q --dead 7
	assert_equal "$stderr" ''
	unchanged
	run -64 --separate-stderr spirt-shard --dead 0 --dead 1
	assert_equal "$stderr" 'spirt-shard: data/train/assign: cannot reassign: no live worker would remain'
	unchanged
}

@test "--live: bad lists and settings exit 64, a step before the revision 65; nothing changes" {
	seed_store
	for l in '' , 1, x 2-1 1-x -1 3--4; do
		run -64 spirt-shard --live "$l"
	done
	run -64 --separate-stderr spirt-shard --live 0 --dead 1
	assert_equal "$stderr" 'spirt-shard: --dead and --live: give one of them'
	run -64 --separate-stderr spirt-shard --live 0 -t 1 --epoch 1
	assert_equal "$stderr" 'spirt-shard: -t and --epoch: give one of them'
	run -64 --separate-stderr spirt-shard --live 0 -b 4
	assert_equal "$stderr" "spirt-shard: -b is the batch of -t's steps: give -t"
	run -64 --separate-stderr spirt-shard --live 0,5
	assert_equal "$stderr" 'spirt-shard: data/train/assign: cannot reassign: worker 5 has no shard: 2 shards'
	unchanged
	# revision 1 from step 3 in batches of 2 (5 samples a shard: 3
	# steps an epoch, so epoch 1 step 0); then step 2 comes before it;
	# revision 2 from step 4 (epoch 1 step 1) counts in batches of 2,
	# and with batches of 3 step 3 is in that part too
	run -0 spirt-shard -t 3 -b 2 --live 0
	before=$(digest "$SPIRT_STORE")
	run -65 --separate-stderr spirt-shard -t 2 -b 2 --live 0,1
	assert_equal "$stderr" 'spirt-shard: data/train/assign: cannot reassign: step 2 (epoch 0 step 2) comes before revision 1'
	run -65 --separate-stderr spirt-shard --epoch 0 --live 0,1
	assert_equal "$stderr" 'spirt-shard: data/train/assign: cannot reassign: epoch 0 comes before revision 1 (from epoch 1)'
	unchanged
	run -0 spirt-shard -t 4 -b 2 --live 0
	before=$(digest "$SPIRT_STORE")
	run -64 --separate-stderr spirt-shard -t 3 -b 3 --live 0
	[[ "$stderr" == *"cannot reassign: revision 2 counts epoch 1 from step 1 in batches of 2, not 3" ]] ||
		fail "$stderr"
	unchanged
}

@test "--stats, --dead: missing store or data set exits 66" {
	run -66 --separate-stderr spirt-shard --stats
	assert_equal "$stderr" "spirt-shard: $SPIRT_STORE: open data/train: No such file or directory"
	[ ! -e "$SPIRT_STORE" ]
	run -66 spirt-shard --dead 1
	seed_store
	run -66 --separate-stderr spirt-shard -d nope --stats
	assert_equal "$stderr" "spirt-shard: $SPIRT_STORE: stats data/nope: no such key"
	run -66 spirt-shard -d nope --dead 0
	unchanged
}

@test "write errors exit 74: stdout full, store map full" {
	seed_store
	run -74 bash -c 'spirt-shard --stats > /dev/full'
	SPIRT_MAPSIZE=64k SPIRT_MAPSIZE_MAX=64k \
	    run -74 --separate-stderr spirt-shard -s full.db \
	    "$FMNIST/t10k-images-idx3-ubyte.gz" \
	    "$FMNIST/t10k-labels-idx1-ubyte.gz"
	run -0 spirt-store -s full.db ls
	assert_output ''
}

@test "-o: the shards as x, y record pairs in a data file, no store" {
	run -0 --separate-stderr spirt-shard -n 3 --seed 7 -o d.spt "$IMG" "$LAB"
	assert_output ''
	assert_equal "$stderr" ''
	[ ! -e "$SPIRT_STORE" ]
	spirt-shard -n 3 --seed 7 "$IMG" "$LAB"
	for k in 0 1 2; do
		spirt-store get data/train/$k/x
		spirt-store get data/train/$k/y
	done | cmp - d.spt
	spirt-shard -n 3 --seed 7 -o - "$IMG" "$LAB" | cmp - d.spt
	ls -a | grep -q tmp && fail "a temporary file is left"
	run -0 spirt-store inspect d.spt
	[ "$(grep -c '^record=' <<<"$output")" -eq 6 ]
	assert_line 'name=train'
	assert_line 'samples=4'
	assert_line 'samples=3'
}

@test "-o: usage, bad input and a missing directory write nothing" {
	mkdir out
	run -64 --separate-stderr spirt-shard -o out/d.spt --stats "$IMG" "$LAB"
	assert_equal "$stderr" 'spirt-shard: -o: --stats, --list, --holders, --dead, --live and --standardise work on the store'
	run -64 spirt-shard -o out/d.spt --dead 1
	run -64 spirt-shard -o out/d.spt -n 11 "$IMG" "$LAB"
	run -65 spirt-shard -o out/d.spt "$SH/short-images-idx3-ubyte" "$LAB"
	run -73 --separate-stderr spirt-shard -o out/nodir/d.spt "$IMG" "$LAB"
	assert_equal "$stderr" 'spirt-shard: out/nodir/d.spt: No such file or directory'
	run -74 bash -c "spirt-shard -o - '$IMG' '$LAB' >/dev/full"
	[ -z "$(ls out)" ] || fail "left: $(ls out)"
}

@test "Fashion-MNIST: 60000 train in 4 shards, test set" {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no $FMNIST"
	# (its speed is bench/ material, not a test's: no timed assertion)
	run -0 --separate-stderr spirt-shard -n 4 --seed 1 --stats \
	    "$FMNIST/train-images-idx3-ubyte.gz" \
	    "$FMNIST/train-labels-idx1-ubyte.gz"
	assert_line --index 0 'dataset train samples 60000 classes 10 features 784 dtype u8 shape 1x28x28 shards 4 revision 0'
	assert_line 'shard 3 samples 15000 hist 1500 1485 1499 1502 1498 1456 1527 1473 1501 1559'
	assert_line 'total samples 60000 hist 6000 6000 6000 6000 6000 6000 6000 6000 6000 6000'
	run -0 spirt-shard -d test --classes 10 \
	    "$FMNIST/t10k-images-idx3-ubyte.gz" \
	    "$FMNIST/t10k-labels-idx1-ubyte.gz"
	run -0 spirt-store export data/test/0/y y.npy
	run -0 spirt-store export data/test/0/x x.npy
	# every (image, label) pair is one of the originals
	run -0 "$PYTHON" -c "
import gzip, numpy as np
def idx(p, off):
    return np.frombuffer(gzip.open(p).read(), np.uint8, offset=off)
im = idx('$FMNIST/t10k-images-idx3-ubyte.gz', 16).reshape(-1, 784)
lb = idx('$FMNIST/t10k-labels-idx1-ubyte.gz', 8)
x, y = np.load('x.npy').reshape(-1, 784), np.load('y.npy')
a = {(r.tobytes(), int(l)) for r, l in zip(im, lb)}
b = {(r.tobytes(), int(l)) for r, l in zip(x, y)}
print(len(x), a == b, (x[:100] != im[:100]).any())"
	assert_output '10000 True True'
}

@test "--holders' eighth field: the other peers' workers the full part leaves out, until an epoch holds them again" {
	# 10 samples in 4 shards (3 3 2 2), batch 1: 2 steps an epoch; two
	# peers of 2 workers each; the second peer is out of the round of
	# step 0: its workers' samples go to the first's from step 1
	spirt-shard -n 4 "$IMG" "$LAB"
	run -0 spirt-shard -q -t 1 -b 1 --since 0 --group 2 --live 0,1 \
	    --holders 0,2
	assert_output '1:0:1:1: 0 1: 0 1:: 2 3'
	run -0 spirt-shard --holders 2,2
	assert_output '1:0:0:0::: 0 1:'
	# (a peer with none of the rows: every worker not its own)
	run -0 spirt-shard --holders 6,2
	assert_output '1:0:0:0::: 0 1: 2 3'
	# worker 3 is back at epoch 1, 2 is not
	run -0 spirt-shard -q --epoch 1 --group 2 --live 0,1,3 --holders 0,2
	assert_output '2:0:1:1: 0 1: 0 1: 3: 2'
	run -0 spirt-shard -q --epoch 2 --group 2 --live 0-3 --holders 0,2
	assert_output '3:0:0:2:: 0 1: 2 3:'
}

@test "-t at an epoch's first step, with or without --since it: the rows of --epoch's (spirt-train's reassign has one spelling)" {
	# 10 samples in 4 shards (3 3 2 2): batch 1, 2 steps an epoch;
	# batch 2, 1.  Each case on two stores, the same before
	for b in 1 2; do
		spe=$(((2 + b - 1) / b))
		for live in 0,2,3 0-3 2,3 1; do
			for pre in none died out; do
				for s in a b; do
					rm -rf "$s"
					spirt-shard -s "$s" -n 4 "$IMG" "$LAB"
					case $pre in
					died) spirt-shard -q -s "$s" --epoch 1 \
					    --group 2 --live 0,1,2 ;;
					out) spirt-shard -q -s "$s" -t 1 -b 1 \
					    --since 0 --group 2 --live 0,1 ;;
					esac
				done
				T=$((spe * 2)) since=
				[ "$pre" != out ] || since="--since $T"
				run -0 spirt-shard -s a -q -t "$T" -b "$b" $since \
				    --group 2 --live "$live" --holders 0,2
				ha=$output
				run -0 spirt-shard -s b -q --epoch 2 --group 2 \
				    --live "$live" --holders 0,2
				assert_equal "$ha" "$output"
				assert_equal "$(spirt-shard -s a --list)" \
				    "$(spirt-shard -s b --list)"
			done
		done
	done
}
