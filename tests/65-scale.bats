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
		tx = 60e-3 + 60e-6 * (P - 1) + 2 * (P - 1) * S / (2 * 66e6)
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
}
