"""warm_step.py - where the milliseconds of a warm spirt step go.

Runs spirt-train's warm workflow with a driver that stamps the time at
every hand-off: the same --serve tools with the same options, a step at a
time (FUNCTIONS gradient functions side by side, then the aggregate, then
the update), each tool answering one line per step, as spirt-train drives
them through its FIFOs.  The phases of a step are disjoint intervals of
that step, so they and the whole are measured in the same run and add up:
    whole = grad phase + agg + update + driver (the rest: hand-offs,
            this driver's own work between the phases)

usage: warm_step.py [-fps] STORE MODEL FUNCTIONS BATCH SEED LR STEPS
  STORE holds the shards and model/MODEL@0 (spirt-shard, spirt-init); the
  run adds to it.  SPIRT_SYNC in the environment applies to every tool.
Prints one line, milliseconds per step (means over the steps):
  whole  grad  agg  update  driver  first_grad  steps
(first_grad: from the step's start to the first function's answer)
  -p  one line per step instead, its milliseconds (bench/floor.sh takes
      medians of them):  step  whole  grad  agg  update  driver  first_grad
  -f  the fused step, as spirt-train sends it with the mean on one peer:
      no spirt-agg request, the update's is "t mean=grad" (agg 0)
  -s  the fused step with the gradient slots, as spirt-train sends it
      with spirt-grad's functions: "t to=slot" to each function, "t
      mean=slots" to the update (agg 0)
"""
import os
import select
import subprocess
import sys
import time


def main():
    args = sys.argv[1:]
    per = fused = slots = False
    while args[:1] and len(args[0]) > 1 and args[0][0] == "-" and \
            set(args[0][1:]) <= set("fps"):
        per = per or "p" in args[0]
        slots = slots or "s" in args[0]
        fused = fused or slots or "f" in args[0]
        args = args[1:]
    if len(args) != 7:
        sys.stderr.write(__doc__.split("\n\n")[2] + "\n")
        sys.exit(64)
    store, model, fns, batch, seed, lr, steps = args
    fns, steps = int(fns), int(steps)
    env = dict(os.environ, SPIRT_STORE=store)
    env.setdefault("SPIRT_THREADS", "1")

    def start(argv):
        return subprocess.Popen(argv, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, env=env,
                                bufsize=0)

    # the tools and options of spirt-train's warm workflow (momentum, the
    # mean, pruning at every step, a durable version every 100 steps)
    grads = [start(["spirt-grad", "-q", "--serve", "-m", model, "-w", str(w),
                    "-b", batch, "-S", seed]) for w in range(fns)]
    agg = start(["spirt-agg", "-q", "-R", "-P", "-r", "mean", "--serve"])
    upd = start(["spirt-update", "-q", "-m", model, "-r", lr, "--opt",
                 "momentum", "--momentum", "0.9", "--schedule", "constant",
                 "--lr-total", str(steps), "--keep", "2", "--checkpoint",
                 "100", "--serve"])
    tools = grads + [agg, upd]

    def ask(p):         # one answer line of p (it writes it at once)
        line = b""
        while not line.endswith(b"\n"):
            k = os.read(p.stdout.fileno(), 4096)
            if not k:
                break
            line += k
        if not line.endswith(b"\n") or b"error=" in line:
            sys.stderr.write("warm_step: %s answered %r\n" % (p.args[0],
                                                            line))
            for q in tools:
                q.kill()
            sys.exit(70)

    byfd = {p.stdout.fileno(): p for p in grads}
    steps_ms = []
    grad = aggt = updt = first = 0.0
    begin = time.perf_counter()
    for t in range(steps):
        msg = b"%d\n" % t
        t0 = time.perf_counter()
        for p in grads:
            os.write(p.stdin.fileno(), b"%d to=slot\n" % t if slots
                     else msg)
        t1, left = 0.0, set(byfd)
        while left:
            for fd in select.select(list(left), [], [])[0]:
                ask(byfd[fd])
                left.discard(fd)
            t1 = t1 or time.perf_counter()
        t2 = time.perf_counter()
        if not fused:
            os.write(agg.stdin.fileno(), msg)
            ask(agg)
        t3 = time.perf_counter()
        os.write(upd.stdin.fileno(), b"%d mean=%s\n" % (t, b"slots" if
                 slots else b"grad") if fused else msg)
        ask(upd)
        t4 = time.perf_counter()
        if per:
            # (the driver's part: from the update's answer to the next
            # step's start, this step's bookkeeping, stamped next time)
            steps_ms.append([t0, t1 - t0, t2 - t0, t3 - t2, t4 - t3])
        first += t1 - t0
        grad += t2 - t0
        aggt += t3 - t2
        updt += t4 - t3
    whole = time.perf_counter() - begin
    for p in tools:
        p.stdin.close()
    for p in tools:
        p.wait()
    if per:
        ends = [s[0] for s in steps_ms[1:]] + [begin + whole]
        for t, (s, e) in enumerate(zip(steps_ms, ends)):
            w = e - s[0]
            print("%d\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f" % (
                t, w * 1e3, s[2] * 1e3, s[3] * 1e3, s[4] * 1e3,
                (w - s[2] - s[3] - s[4]) * 1e3, s[1] * 1e3))
        return
    k = 1e3 / steps
    print("%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%d" % (
        whole * k, grad * k, aggt * k, updt * k,
        (whole - grad - aggt - updt) * k, first * k, steps))


if __name__ == "__main__":
    main()
