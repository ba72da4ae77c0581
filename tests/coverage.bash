# tests/coverage.bash: coverage STEPS S K N LOG[:FROM[:TO]]...: in each
# whole epoch of S steps (STEPS of them), the gradients applied used every
# sample of the K shards of N exactly once; prints the workers of each
# epoch ("epoch E workers W..."). Each LOG (SPIRT_SAMPLE_LOG) counts for
# its steps from FROM (default 0) to before TO (default none); of a step
# it counts the newest revision (a peer computes a step again when a
# function of its own dies), and a worker's step taken again under one
# revision with the same samples (its peer's driver run again) once: the
# same worker, step and revision with other samples counts both.  Loaded
# by tests/52-parts, 56-failures and 57-workers.
coverage() {
	"$PYTHON" - "$@" <<'PY'
import collections, sys
T, S, K, N = map(int, sys.argv[1:5])
def read(spec):
    f = spec.split(":")
    path, lo = f[0], int(f[1]) if len(f) > 1 and f[1] else 0
    hi = int(f[2]) if len(f) > 2 and f[2] else None
    by = collections.defaultdict(dict)
    for line in open(path):
        m = dict(kv.split("=", 1) for kv in line.split())
        t = int(m["step"])
        if t >= lo and (hi is None or t < hi):
            by[t][(m["worker"], m["revision"], m["samples"])] = m
    return by
logs = [read(spec) for spec in sys.argv[5:]]
want = {(k, i) for k in range(K) for i in range(N)}
for e in range(T // S):
    seen = collections.Counter()
    workers = set()
    for by in logs:
        for t in range(e * S, (e + 1) * S):
            if not by[t]:
                continue
            top = max(int(m["revision"]) for m in by[t].values())
            for m in by[t].values():
                if int(m["revision"]) == top:
                    workers.add(int(m["worker"]))
                    seen.update(tuple(map(int, s.split(":")))
                                for s in m["samples"].split(","))
    twice = [s for s, c in seen.items() if c > 1]
    missed = want - set(seen)
    assert not twice and not missed and set(seen) <= want, \
        (e, len(twice), len(missed))
    print("epoch %d workers %s" % (e, " ".join(map(str, sorted(workers)))))
PY
}
