#!/usr/bin/env bats
# 65-scale: contrib/scale-model.py, docs/scale.md's model, computes what
# its documented formula says: one row recomputed here in awk from the
# defaults it prints (--help), and the laws the doc draws from it.

load helper

SCALE="$SPIRT_ROOT/contrib/scale-model.py"

@test "scale model: the 10-peer row is the formula's, recomputed independently" {
	run -0 "$PYTHON" "$SCALE" --csv --peers 10
	[ "${lines[0]}" = 'peers,step_s,fn_s,exchange_s,samples_per_s,exchange_gb,usd_functions,usd_peers,usd_transfer,usd_step,usd_per_million' ]
	row=${lines[1]}
	# the defaults of docs/scale.md: the fit through bench/remote's two
	# functions, bench/train's agg and update, bench/peer's exchange
	run -0 awk -v row="$row" 'BEGIN {
		split(row, g, ",")
		P = 10; M = 4; B = 64; S = 4 * 235146 + 104
		r = (16.7e6 - 1.7e6) / (76.4e-3 - 26.9e-3); t0 = 26.9e-3 - 1.7e6 / r
		tfn = t0 + (S + 1000 * 788) / r
		# the pull bound by the 2 cores (1.67 GB/s each, in and out)
		# or the 10 Gbit/s network, whichever is slower
		w = 2 * (P - 1) * S / (2 * 1.67e9)
		if ((P - 1) * S / 1.25e9 > w) w = (P - 1) * S / 1.25e9
		tx = 18e-3 + 2 * 0.5e-3 + 60e-6 * (P - 1) + w
		T = tfn + 1.97e-3 + 3.75e-3 + tx
		ms = tfn * 1000; billed = (ms == int(ms) ? ms : int(ms) + 1) / 1000
		fns = P * M * (0.2e-6 + 0.0000166667 * 1769 / 1024 * billed)
		peers = P * 0.085 * T / 3600
		want[2] = T; want[3] = tfn; want[4] = tx; want[5] = P * M * B / T
		want[6] = P * (P - 1) * S / 1e9; want[7] = fns; want[8] = peers
		want[10] = fns + peers; want[11] = (fns + peers) / (P * M * B) * 1e6
		for (k = 2; k <= 11; k++) {
			if (k == 9) continue
			d = g[k] - want[k]; if (d < 0) d = -d
			if (d > 1e-5 * (want[k] < 0 ? -want[k] : want[k])) {
				print "column " k ": " g[k] " != " want[k]; bad = 1
			}
		}
		exit bad }'
	assert_output ''
}

@test "scale model: exchanging every H divides the exchange by H, not the functions; transfer grows as P(P-1); a ring moves 2(P-1)/P aggregates" {
	run -0 "$PYTHON" "$SCALE" --csv --peers 100,1000
	a=(${lines[1]//,/ }) b=(${lines[2]//,/ })
	run -0 "$PYTHON" "$SCALE" --csv --peers 100,1000 --every 10
	h=(${lines[1]//,/ })
	awk -v a="${a[3]}" -v h="${h[3]}" -v fa="${a[6]}" -v fh="${h[6]}" \
	    -v ga="${a[5]}" -v gb="${b[5]}" 'BEGIN {
		exit !(h / a > 0.0999 && h / a < 0.1001 && fa == fh &&
		    gb / ga > 100.8 && gb / ga < 101.0) }'
	run -0 "$PYTHON" "$SCALE" --csv --peers 1000 --ring
	r=(${lines[1]//,/ })
	# 1000 peers x 2 x 999/1000 aggregates of 940688 bytes
	awk -v g="${r[5]}" 'BEGIN { w = 1000 * 2 * 0.999 * 940688 / 1e9
		exit !(g / w > 0.99999 && g / w < 1.00001) }'
	run -0 "$PYTHON" "$SCALE" --help
	assert_output --partial '--usd-gb-s'
	run -2 "$PYTHON" "$SCALE" --peers
	run -2 "$PYTHON" "$SCALE" --exchange ring
}

@test "scale model: the partitioned exchange's row is its formula's: 2 S (P-1)/P, the checks, the records, the requests" {
	for r in v1 v2 merkle; do
		run -0 "$PYTHON" "$SCALE" --csv --peers 16 --exchange parts --records $r
		row=${lines[1]}
		run -0 awk -v row="$row" -v rec=$r 'BEGIN {
			split(row, g, ",")
			P = 16; S = 4 * 235146 + 104; o = P - 1
			if (rec == "v1") R = 2 * o * (472 + 64 * P)
			else if (rec == "v2") R = o * (472 + 64 * P + 536)
			else R = o * (536 + 536 + 88 + 32 * 4)  # log2 16 = 4
			moved = 2 * S * o / P + S * o / (P * P) + R + (4 * o + 2) * 500
			wire = 2 * moved / (2 * 1.67e9)
			if (moved / 1.25e9 > wire) wire = moved / 1.25e9
			tx = 54e-3 + 5 * 0.5e-3 + 60e-6 * 2 * o + wire
			d = g[4] - tx; if (d < 0) d = -d
			if (d > 1e-5 * tx) { print "exchange_s " g[4] " != " tx; exit 1 }
			gb = P * moved / 1e9; d = g[6] - gb; if (d < 0) d = -d
			if (d > 1e-5 * gb) { print "exchange_gb " g[6] " != " gb; exit 1 }
		}'
		assert_output ''
	done
	# flat in P where S is much more than the records: about 2 S a peer
	# at 16 peers; with version 2's input records their P^2 term past
	# that (69 S at 1,000)
	run -0 "$PYTHON" "$SCALE" --csv --peers 16,1000 --exchange parts --records v2
	a=(${lines[1]//,/ }) b=(${lines[2]//,/ })
	awk -v a="${a[5]}" -v b="${b[5]}" 'BEGIN { S = 4 * 235146 + 104
		x = a * 1e9 / 16 / S; y = b * 1e9 / 1000 / S
		exit !(x > 1.9 && x < 2.2 && y > 60) }'
	# the default, version 3's (merkle): P log P, within 7 S at 1,000
	run -0 "$PYTHON" "$SCALE" --csv --peers 1000 --exchange parts
	m=(${lines[1]//,/ })
	run -0 "$PYTHON" "$SCALE" --csv --peers 1000 --exchange parts --records merkle
	[ "${lines[1]}" = "$(IFS=,; echo "${m[*]}")" ]
	awk -v m="${m[5]}" 'BEGIN { y = m * 1e9 / 1000 / (4 * 235146 + 104)
		exit !(y > 4 && y < 7) }'
}
