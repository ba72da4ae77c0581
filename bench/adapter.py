"""bench/adapter.py - spirt-torch's warm step against a plain PyTorch loop.

    python3 bench/adapter.py STORE MODULE MODEL BATCH ROUNDS N

One thread each.  In each of ROUNDS interleaved rounds: N steps of a plain
PyTorch loop (zero the gradients, forward, loss, backward, an SGD update)
on the minibatch of (step 0, worker 0), which spirt-store batch serves;
then N requests "0 0" to one warm `spirt-torch grad -i` (the same module,
model/MODEL@0, the same batch; its gradient read, computed and written
through spirt-store), timed from the request's write to its answer.  Then
ROUNDS cold invocations.  Prints medians in ms, and the ratio.
"""
import io
import os
import statistics
import subprocess
import sys
import time

store, module, model, batch, rounds, n = sys.argv[1:7]
batch, rounds, n = int(batch), int(rounds), int(n)
os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = "1"
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(1)
env = dict(os.environ, SPIRT_STORE=store)
b = subprocess.run(["spirt-store", "batch", "-t", "0", "-w", "0", "-b",
                    str(batch), "--npy"], env=env, check=True,
                   stdout=subprocess.PIPE).stdout
f = io.BytesIO(b)
x = torch.from_numpy(np.load(f))
y = torch.from_numpy(np.load(f).astype(np.int64))
sys.path.insert(0, os.path.dirname(os.path.abspath(module)))
mod = __import__(os.path.basename(module)[:-3])
torch.manual_seed(0)
net = mod.model()
params = list(net.parameters())

fn = subprocess.Popen(["spirt-torch", "grad", "-i", "-q", "-m", model,
                       "--module", module, "-b", str(batch)], env=env,
                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def warm_once():
    t0 = time.perf_counter()
    fn.stdin.write(b"0 0\n")
    fn.stdin.flush()
    ans = fn.stdout.readline()
    if not ans.startswith(b"step=0 worker=0 samples="):
        sys.exit("bench/adapter: answer %r" % ans)
    return time.perf_counter() - t0


def plain_once():
    t0 = time.perf_counter()
    for p in params:
        p.grad = None
    loss = F.cross_entropy(net(x), y)
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= 0.01 * p.grad
    return time.perf_counter() - t0


def cpu(pid):
    """CPU seconds of pid and its reaped children (the spirt-store
    commands it ran): utime, stime, cutime, cstime"""
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in v[11:15]) / os.sysconf("SC_CLK_TCK")


warm_once()             # the first request loads what it loads
plain_once()
warm, plain, wcpu, pcpu = [], [], [], []
for r in range(rounds):
    c0 = time.process_time()
    plain += [plain_once() for _ in range(n)]
    pcpu.append((time.process_time() - c0) / n)
    c0 = cpu(fn.pid)
    warm += [warm_once() for _ in range(n)]
    wcpu.append((cpu(fn.pid) - c0) / n)
fn.stdin.close()
if fn.wait() != 0:
    sys.exit("bench/adapter: the warm function exited %d" % fn.returncode)
cold = []
for r in range(rounds):
    t0 = time.perf_counter()
    subprocess.run(["spirt-torch", "grad", "-q", "-m", model, "--module",
                    module, "-b", str(batch), "-t", "0", "-w", "0", "-o",
                    os.devnull], env=env, check=True)
    cold.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    cold.append(-(time.perf_counter() - t0))
imp = [-c for c in cold if c < 0]
cold = [c for c in cold if c > 0]


def ms(v):
    return "%.2f ms (%.2f-%.2f)" % (1e3 * statistics.median(v),
                                    1e3 * min(v), 1e3 * max(v))


print("batch %d, %d params, %d rounds of %d steps" % (
    batch, sum(p.numel() for p in params), rounds, n))
print("plain PyTorch step:   %s" % ms(plain))
print("spirt-torch warm:     %s" % ms(warm))
print("ratio (medians):      %.2fx" % (statistics.median(warm) /
                                       statistics.median(plain)))
print("CPU a step, plain:    %s" % ms(pcpu))
print("CPU a step, warm:     %s (the function and its spirt-store)" %
      ms(wcpu))
print("ratio (CPU medians):  %.2fx" % (statistics.median(wcpu) /
                                       statistics.median(pcpu)))
print("spirt-torch cold:     %s" % ms(cold))
print("python3 -c 'import torch': %s" % ms(imp))
