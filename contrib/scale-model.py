#!/usr/bin/python3
"""scale-model.py - time and serverless cost of a spirt training step for
10 to 1,000 peers, calibrated from figures measured on one machine.

    python3 contrib/scale-model.py                 the table of docs/scale.md
    python3 contrib/scale-model.py --every 10      exchanges every 10 steps
    python3 contrib/scale-model.py --help          every assumption, settable
    python3 contrib/scale-model.py --csv           one row per peer count
    python3 contrib/scale-model.py --exchange parts  the partitioned exchange

The model (docs/scale.md says why each term is there and where each
default comes from):

  a step of P peers, M functions each, batch B:
    function  t_fn  = (t0 + (model + shard bytes) / r_fetch) * cpu_slow
                      every function of the step at once, one instance
                      each; cpu_slow = max(1, 1769 MB / memory) (Lambda
                      gives one vCPU per 1769 MB)
    peer      t_agg + t_upd (aggregate M gradients, update in the store)
    exchange  (x0 + t_digest * signed + phases * rtt
               + max(2 moved / (cores * r_x), moved / nic)) / H
              every H steps: a fixed round cost, a signature checked per
              signed record pulled, a round trip per phase, and the bytes
              pulled while serving as many, bound by the peer's cores
              (r_x bytes/s each, crypto and copies) or its network.
              all to all (--exchange all): every other peer's aggregate,
                moved = (P - 1) S, signed = P - 1, phases 2;
              partitioned (--exchange parts, lib/xpart.c): a part of
                each other's and the combined parts back, the checked
                parts, the records and the requests,
                moved = 2 S (P - 1) / P + K r S (P - 1) / P^2
                        + records(P) + (4 (P - 1) + 2) * req,
                signed = 2 (P - 1), phases 5, its own fixed cost x0_parts;
                records(P) = (P - 1) (1160 + 32 ceil(log2 P)) as version 3
                of the records has it (--records merkle: the input and
                result records, 536 bytes each, and each slice's path
                in its u8 record, 32 ceil(log2 P) + 88); v2's input
                records grew with P, (P - 1) (472 + 64 P + 536)
  T(P) = t_fn + t_agg + t_upd + exchange;  samples per step = P * M * B

  cost of a step:
    functions  P * M * (request + GB-second * memory * ceil_ms(t_fn))
    peers      P * instance per hour * T / 3600  (one always-on instance
               per peer holds its store: the part a FaaS cannot hold)
    transfer   P (P - 1) S / H * price per GB crossing zones (0 inside one)
"""

import argparse
import math
import signal
import sys

import numpy as np

# ---- measured figures (docs/performance.md, bench/remote.sh) ----
MEASURED = {
    # bench/remote.sh: a cold spirt-grad through a peer's URL, MLP, batch
    # 64: 26.9 ms fetching 1.7 MB (60 shards), 76.4 ms fetching 16.7 MB
    # (3 shards); the line through both points
    "fn_small": (1.7e6, 26.9e-3),
    "fn_large": (16.7e6, 76.4e-3),
    # bench/train's warm step (docs/performance.md): spirt-agg 1.97 ms,
    # spirt-update 3.75 ms for 4 gradients of the MLP
    "t_agg": 1.97e-3,
    "t_upd": 3.75e-3,
    # bench/links (docs/scale.md, "Measured here: the partitioned
    # exchange", 1 Gbit/s, 2 peers in namespaces over HTTP, load 4-12):
    # a round all to all 26 ms, partitioned 64 ms; less the payload's
    # wire time at 1 Gbit/s (S: 7.5 ms; parts also 0.25 S of checks),
    # the fixed cost of a round of each: 18 and 54 ms (upper figures:
    # 2 shared CPUs at that load)
    "x0": 18e-3,
    "x0_parts": 54e-3,
    # bench/peer part 1 (docs/performance.md, 2026-12-05, quiet): a 40 MB
    # aggregate pulled over veth, handshake and AEAD included, 23.9 ms
    # warm: 1.67 GB/s, a core each end (curl from a static server: 21.0)
    "r_x": 1.67e9,
}

# the partitioned exchange's records (docs/protocol.md "The partitioned
# exchange"): bytes a member pulls a round, the input and result records
# of the P - 1 others (bench/records.sh measures them).  An input record
# was (v1, v2) 192 + 216 (token) + 64 (signature) bytes of head and 64
# bytes an entry, P entries; a result record, v1: the same; v2 (December
# 7, 2026): 536 bytes whatever P (one hash of its inputs); merkle (the
# records' version 3, as spirt does): input records signing the root of
# their P slices (536 bytes), each slice pulled as a u8 record of its
# path, at most ceil(log2 P) hashes of 32 bytes (that many when P is a
# power of two), and its tensor record: 88 bytes of u8 head and checksum
# more a slice
RECORDS = {
    "v1": lambda P: 2 * (P - 1) * (472 + 64 * P),
    "v2": lambda P: (P - 1) * (472 + 64 * P + 536),
    "merkle": lambda P: (P - 1) * (536 + 536 + 88
                                   + 32 * np.ceil(np.log2(P))),
}
REQ = 500       # bytes of a sealed request and its answer's head, HTTP


def fit_fetch():
    """t0 (s) and r_fetch (bytes/s) from the two measured functions."""
    (b1, t1), (b2, t2) = MEASURED["fn_small"], MEASURED["fn_large"]
    r = (b2 - b1) / (t2 - t1)
    return t1 - b1 / r, r


def args():
    t0, r = fit_fetch()
    p = argparse.ArgumentParser(
        description="Time and serverless cost of a spirt step, 10 to "
        "1,000 peers (see docs/scale.md).")
    a = p.add_argument
    a("--peers", default="10,30,100,300,1000",
      help="peer counts, comma-separated (default %(default)s)")
    a("--functions", type=int, default=4, help="M per peer (default 4)")
    a("--batch", type=int, default=64, help="B per function (default 64)")
    a("--params", type=int, default=235146,
      help="model floats (default: the MLP 784-256-128-10, 235146)")
    a("--shard-samples", type=int, default=1000,
      help="samples of a function's shard, fetched whole (default 1000)")
    a("--sample-bytes", type=int, default=784,
      help="bytes per sample (default 784: a Fashion-MNIST image)")
    a("--every", type=int, default=1, help="H: exchange every H steps")
    a("--t0", type=float, default=t0,
      help="a function's fixed time, s (default %.4f, fitted)" % t0)
    a("--r-fetch", type=float, default=r,
      help="a function's fetch rate, bytes/s (default %.3g, fitted)" % r)
    a("--t-agg", type=float, default=MEASURED["t_agg"])
    a("--t-upd", type=float, default=MEASURED["t_upd"])
    a("--exchange", choices=("all", "parts"), default="all",
      help="all: every peer pulls every other's aggregate (default); "
      "parts: the partitioned exchange (spirt-train --exchange parts)")
    a("--x0", type=float, default=MEASURED["x0"],
      help="an all-to-all round's fixed time, s (default 0.018)")
    a("--x0-parts", type=float, default=MEASURED["x0_parts"],
      help="a partitioned round's fixed time, s (default 0.054)")
    a("--records", choices=sorted(RECORDS), default="merkle",
      help="--exchange parts: the records' layout: v1 (P entries a "
      "record), v2 (the result's one hash, the input's P entries), "
      "merkle (the input's root, each slice with its path; the "
      "default, as spirt does)")
    a("--check-parts", type=int, default=1,
      help="--exchange parts: K, parts checked a round (default 1)")
    a("--check", type=int, default=1,
      help="--exchange parts: r, checkers a part (default 1)")
    a("--rtt", type=float, default=0.5e-3,
      help="a round trip between peers, s (default 0.5e-3, assumed: "
      "one zone); one a phase of the round")
    a("--r-x", type=float, default=MEASURED["r_x"],
      help="exchange bytes/s per peer core (default 1.67e9)")
    a("--t-digest", type=float, default=60e-6,
      help="checking one peer's signed digest, s (default 60e-6; "
      "assumed: an Ed25519 verification and a SHA-256 hash)")
    a("--cores", type=int, default=2, help="cores of a peer's instance")
    a("--nic", type=float, default=1.25e9,
      help="a peer's network, bytes/s (default 1.25e9: 10 Gbit/s)")
    a("--memory", type=float, default=1769,
      help="function memory, MB (default 1769: one Lambda vCPU)")
    a("--usd-gb-s", type=float, default=0.0000166667,
      help="per GB-second (default: AWS Lambda x86, us-east-1)")
    a("--usd-request", type=float, default=0.20e-6,
      help="per request (default: $0.20 per million)")
    a("--usd-peer-hour", type=float, default=0.085,
      help="a peer's instance per hour (default: 2 vCPU, c6i.large "
      "on demand, us-east-1)")
    a("--usd-gb-transfer", type=float, default=0.0,
      help="per GB between peers (default 0: one zone; 0.02 across "
      "zones, both directions)")
    a("--ring", action="store_true",
      help="on paper, not in spirt: the peers' aggregates combined by a "
      "ring all-reduce (each peer moves 2 (P - 1) / P * S bytes, in "
      "2 (P - 1) hops) instead of every peer pulling every other's")
    a("--hop", type=float, default=1e-3,
      help="--ring: one hop's latency, s (default 1e-3, assumed)")
    a("--csv", action="store_true", help="CSV rows instead of the table")
    return p.parse_args()


def model(o):
    """Per-step figures for each peer count, as numpy arrays."""
    P = np.array([int(x) for x in o.peers.split(",")], dtype=np.float64)
    if (P < 1).any() or o.functions < 1 or o.batch < 1 or o.every < 1:
        sys.exit("scale-model: counts must be at least 1")
    S = 4.0 * o.params + 104            # an aggregate record, bytes
    fetched = S + o.shard_samples * (o.sample_bytes + 4)
    slow = max(1.0, 1769.0 / o.memory)
    t_fn = (o.t0 + fetched / o.r_fetch) * slow
    others = P - 1
    if o.ring:                  # bytes a peer sends (and receives)
        moved = 2 * others / P * S
        lat = 2 * others * o.hop
        x0, signed = o.x0, others
    elif o.exchange == "parts":
        moved = (2 * S * others / P
                 + o.check_parts * o.check * S * others / P ** 2
                 + RECORDS[o.records](P) + (4 * others + 2) * REQ)
        lat = 5 * o.rtt
        x0, signed = o.x0_parts, 2 * others
    else:                       # every other's in, ours out to each
        moved = others * S
        lat = 2 * o.rtt
        x0, signed = o.x0, others
    wire = np.maximum(2 * moved / (o.cores * o.r_x), moved / o.nic)
    t_x = ((x0 + lat) * (P > 1) + o.t_digest * signed + wire) / o.every
    T = t_fn + o.t_agg + o.t_upd + t_x
    n_fn = P * o.functions
    billed = math.ceil(t_fn * 1000) / 1000          # Lambda bills per ms
    usd_fn = n_fn * (o.usd_request + o.usd_gb_s * o.memory / 1024 * billed)
    usd_peer = P * o.usd_peer_hour * T / 3600
    gb = P * moved / o.every / 1e9
    usd_tx = gb * o.usd_gb_transfer
    samples = n_fn * o.batch
    usd = usd_fn + usd_peer + usd_tx
    return dict(peers=P, step_s=T, fn_s=np.full_like(P, t_fn),
                exchange_s=t_x, samples_per_s=samples / T,
                exchange_gb=gb, usd_functions=usd_fn, usd_peers=usd_peer,
                usd_transfer=usd_tx, usd_step=usd,
                usd_per_million=usd / samples * 1e6)


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # | head: a quiet end
    o = args()
    m = model(o)
    keys = list(m)
    if o.csv:
        print(",".join(keys))
        for i in range(len(m["peers"])):
            print(",".join("%.6g" % m[k][i] for k in keys))
        return
    print("spirt step, %d functions x batch %d per peer, %d floats, "
          "exchange every %d step%s%s; %g MB functions" %
          (o.functions, o.batch, o.params, o.every,
           "" if o.every == 1 else "s", " (ring, on paper)" if o.ring
           else " (partitioned)" if o.exchange == "parts" else "",
           o.memory))
    print("%6s %8s %8s %9s %10s %8s %9s %8s %9s %9s %9s" %
          ("peers", "step s", "fn s", "exch s", "samples/s", "GB/step",
           "$ fns", "$ peers", "$ xfer", "$/step", "$/1M smp"))
    for i in range(len(m["peers"])):
        print("%6d %8.3f %8.3f %9.3f %10.0f %8.1f %9.5f %8.5f %9.4f "
              "%9.5f %9.3f" % tuple(m[k][i] for k in (
                  "peers", "step_s", "fn_s", "exchange_s", "samples_per_s",
                  "exchange_gb", "usd_functions", "usd_peers",
                  "usd_transfer", "usd_step", "usd_per_million")))


if __name__ == "__main__":
    main()
