#!/usr/bin/python3
# make_byz_fixtures.py - expected results of spirt-agg's cclip and bucketing
#
# Writes into the output directory (default tests/data/byz), with the
# NumPy references of contrib/python/byzantine_ref.py (float64):
#
#   G.npy            f32 [10, 37] ten gradients (row w: origin w), row 7
#                    scaled by 50 (an outlier)
#   c.npy            f32 [37] a centre (the previous aggregate)
#   cclip_t2.npy     cclip, tau 2, 1 iteration, centre 0
#   cclip_t05_l3_c.npy  cclip, tau 0.5, 3 iterations, centre c
#   b2s5_mean.npy    buckets of 2 (seed 5, step 3), then the mean
#   b2s5_median.npy  ... then the median
#   b3s1_trim25.npy  buckets of 3 (seed 1, step 3), then trim 0.25
#   b2s0_krum1.npy   buckets of 2 (seed 0, step 3), then Krum f = 1
#   b2s0_krum1_used.npy  i64, the origins in Krum's chosen bucket
#   cclip_auto1.npy  cclip, tau auto (f = 1: the 2nd largest distance),
#                    centre c
#   scclip_own2_t2.npy  scclip centred on row 2, tau 2
#   scclip_own2_auto1.npy  scclip centred on row 2, tau auto, f = 1
#   GM.npy           f32 [3, 10, 37] gradients of steps 0..2 (row 7
#                    scaled by 50 at each step); worker 4 has none at
#                    step 1 (its row there is NaN: not a gradient)
#   mom_cclip_t2.npy  f64 [3, 37] agg/0..2 of cclip tau 2 on the workers'
#                    momenta, beta 0.9, each centred on the one before
#                    (agg/0 on 0)
#   mom_step2.npy    f64 [10, 37] the momenta mom/2/<w>
#
# Run with Debian's python3 (python3-numpy):
#   /usr/bin/python3 contrib/python/make_byz_fixtures.py [outdir]
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import byzantine_ref as ref  # noqa: E402


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/byz"
    os.makedirs(out, exist_ok=True)
    G = np.random.default_rng(1).standard_normal((10, 37)).astype(np.float32)
    G[7] *= 50
    c = (np.random.default_rng(2).standard_normal(37) * 0.3).astype(np.float32)
    step = 3
    res = {
        "G": G,
        "c": c,
        "cclip_t2": ref.cclip(G, 2.0),
        "cclip_t05_l3_c": ref.cclip(G, 0.5, 3, c),
        "b2s5_mean": ref.buckets(G, 2, 5, step)[0].mean(0),
        "b2s5_median": ref.median(ref.buckets(G, 2, 5, step)[0]),
        "b3s1_trim25": ref.trim(ref.buckets(G, 3, 1, step)[0], 0.25),
    }
    B, groups = ref.buckets(G, 2, 0, step)
    k = ref.krum_select(B, 1)[0]
    res["b2s0_krum1"] = B[k]
    res["b2s0_krum1_used"] = np.array(sorted(groups[k]), np.int64)
    res["cclip_auto1"] = ref.cclip(G, None, 1, c, f=1)
    res["scclip_own2_t2"] = ref.scclip(G, 2, 2.0)
    res["scclip_own2_auto1"] = ref.scclip(G, 2, None, f=1)
    # three steps of worker momentum under cclip
    GM = np.random.default_rng(3).standard_normal((3, 10, 37)).astype(
        np.float32)
    GM[:, 7] *= 50
    steps = [{w: GM[t, w] for w in range(10) if (t, w) != (1, 4)}
             for t in range(3)]
    mom = ref.momenta(steps, 0.9)
    aggs, centre = [], None
    for t in range(3):
        ws = sorted(mom[t])
        centre = ref.cclip(np.stack([mom[t][w] for w in ws]), 2.0, 1, centre)
        aggs.append(centre)
    GM[1, 4] = np.nan
    res["GM"] = GM
    res["mom_cclip_t2"] = np.stack(aggs)
    res["mom_step2"] = np.stack([mom[2][w] for w in range(10)])
    for name, a in res.items():
        np.save(os.path.join(out, name + ".npy"), a)


if __name__ == "__main__":
    main()
