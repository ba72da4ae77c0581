"""run_stamp.py - stamp spirt-train's requests and answers in its own run.

  run_stamp.py LOG SPIRT-RUN ARG...
Runs the supervisor SPIRT-RUN ARG... (spirt-run(1)) with this process
relaying its standard input and output, as spirt-train drives it, and
writes LOG.PID at the end: a line per request and answer line, the
CLOCK_MONOTONIC seconds it passed here, q or a, and the line.  The
relay is one hop more each way (bench/floor.sh puts a shim named
spirt-run first in spirt-train's PATH, and measures what it costs).

  run_stamp.py -r FILE
One line per step of the run in FILE, in warm_step.py -p's columns, ms:
  step  whole  grad  agg  update  driver  first_grad
grad from the step's first "send g" to its last gradient's answer,
first_grad to its first; agg and update from their request to their
answer (agg 0 when spirt-update took the mean itself, mean=grad);
driver the rest of the step, until the next step's first "send
g" (the driver's own work between the tools, and the relay's hops to and
from it).  Steps that are not a plain warm step (a function restarted,
the last step) are left out.  A step that is one request, "fan g0,...
T ... then upd ..." answered "stepped upd ...", hides its parts from
the relay: grad is then the fan's whole time, from the request to that
line (its update's included), agg, update and first_grad 0.
"""
import os
import select
import signal
import subprocess
import sys
import time


def relay(log, argv):
    # (spirt-run checks that SPIRT_PARENT started it: this relay did)
    env = dict(os.environ)
    if "SPIRT_PARENT" in env:
        env["SPIRT_PARENT"] = str(os.getpid())
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         bufsize=0, env=env)
    signal.signal(signal.SIGTERM, lambda s, f: p.send_signal(s))
    signal.signal(signal.SIGINT, lambda s, f: p.send_signal(s))
    fin, fout = sys.stdin.fileno(), p.stdout.fileno()
    rest = {fin: b"", fout: b""}
    rec = []
    live = {fin, fout}
    while fout in live:
        try:
            ready = select.select(list(live), [], [])[0]
        except InterruptedError:
            continue
        for fd in ready:
            k = os.read(fd, 65536)
            if not k:
                live.discard(fd)
                if fd == fin:
                    p.stdin.close()
                continue
            if fd == fin:
                t = time.monotonic()
                os.write(p.stdin.fileno(), k)
            else:
                os.write(1, k)
                t = time.monotonic()
            lines = (rest[fd] + k).split(b"\n")
            rest[fd] = lines.pop()
            w = "q" if fd == fin else "a"
            rec += [(t, w, x) for x in lines]
    rc = p.wait()
    # (whole or not at all: spirt-train does not wait for its supervisor)
    path, tmp = "%s.%d" % (log, os.getpid()), "%s-tmp.%d" % (log, os.getpid())
    with open(tmp, "w") as f:
        for t, w, x in rec:
            f.write("%.6f\t%s\t%s\n" % (t, w, x.decode("utf-8", "replace")))
    os.rename(tmp, path)
    sys.exit(rc if rc >= 0 else 128 - rc)


def report(path):
    steps = {}          # step -> its stamps
    order = []
    pend = {}           # name -> step of its pending request
    for line in open(path):
        t, w, x = line.rstrip("\n").split("\t", 2)
        t, v = float(t), x.split()
        if w == "q" and len(v) >= 3 and v[0] == "fan":
            s = steps.setdefault(v[2], {"g": 1, "a": [], "fan": 1})
            if v[2] not in order:
                order.append(v[2])
            s.setdefault("s0", t)
            pend["fan"] = v[2]
        elif w == "a" and v[:1] == ["stepped"] and "fan" in pend:
            s = steps[pend.pop("fan")]
            s["a"].append(t)
            s["qupd"] = s["aupd"] = t
        elif w == "q" and len(v) >= 3 and v[0] == "send":
            s = steps.setdefault(v[2], {"g": 0, "a": []})
            if v[2] not in order:
                order.append(v[2])
            pend[v[1]] = v[2]
            if v[1].startswith("g"):
                s.setdefault("s0", t)
                s["g"] += 1
            else:
                s["q" + v[1]] = t
        elif w == "q" and v[:1] == ["start"]:
            if order:
                steps[order[-1]]["bad"] = 1
        elif w == "a" and v[:1] == ["answer"] and v[1] in pend:
            s = steps[pend.pop(v[1])]
            if v[1].startswith("g"):
                s["a"].append(t)
            else:
                s["a" + v[1]] = t
    for i, n in enumerate(order[:-1]):
        s, nx = steps[n], steps[order[i + 1]]
        # (the fused step, "send upd T mean=grad": no spirt-agg, 0)
        need = ("s0", "qupd", "aupd")
        if "bad" in s or any(k not in s for k in need) or \
                len(s["a"]) != s["g"] or "s0" not in nx:
            continue
        whole = nx["s0"] - s["s0"]
        grad = max(s["a"]) - s["s0"]
        agg = s["aagg"] - s["qagg"] if "aagg" in s else 0
        upd = s["aupd"] - s["qupd"]
        first = 0 if "fan" in s else min(s["a"]) - s["s0"]
        print("%s\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f" % (
            n, whole * 1e3, grad * 1e3, agg * 1e3, upd * 1e3,
            (whole - grad - agg - upd) * 1e3,
            first * 1e3))


def main():
    a = sys.argv[1:]
    if len(a) == 2 and a[0] == "-r":
        report(a[1])
    elif len(a) >= 2 and a[0] != "-r":
        relay(a[0], a[1:])
    else:
        sys.stderr.write(__doc__.split("\n\n")[0] + "\n")
        sys.exit(64)


if __name__ == "__main__":
    main()
