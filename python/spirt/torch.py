"""spirt.torch - a PyTorch nn.Module as a spirt function (spirt-torch(1)).

    python3 -m spirt.torch init --module mynet.py -m net
    python3 -m spirt.torch grad --module mynet.py -m net -t 0 -w 1 -b 64
    python3 -m spirt.torch grad --module mynet.py -m net -w 1 -b 64 --serve
    python3 -m spirt.torch eval --module mynet.py -m net

mynet.py defines model(), a factory returning the torch.nn.Module, and
may define loss(), returning the loss function loss(logits, labels) -> a
scalar, the mean over the batch (default: torch's cross_entropy).  Its
parameters are module.parameters() in order, each flattened row-major
(C order) and concatenated: that float32 vector [P] is the model record,
named torch:NAME:P (NAME the file's name without .py, then .FACTORY for
another factory than model), and the gradient record has the same
layout.  Its state is its floating-point buffers (BatchNorm's running
statistics) in module.buffers() order, flattened and concatenated the
same way: grad loads the model's state mstate/MODEL@t into them before
the forward pass and writes what the pass left there as state/t/w
beside the gradient; eval loads it; init writes mstate/MODEL@0
(spirt-model(5)).  grad takes its minibatch from `spirt-store batch`
and reads and writes the store through `spirt-store`, so a store URL,
SPIRT_KEY and the other variables of spirt(7) work as they do for
spirt-grad(1).

Nothing here imports numpy or torch before the options are read: -h and
-V answer under any python3.
"""
import errno
import math
import os
import stat
import re
import signal
import subprocess
import sys

from spirt import __version__

PROG = "spirt-torch"

USAGE = """\
usage: spirt-torch grad [-fiqv] [-b batch] [-d dataset] [-j threads]
       [-m model] [-o file] [-S seed] [-s store] [-t step] [-w worker]
       [--spec spec] --module file[:factory]
       spirt-torch eval [-qv] [-b batch] [-d dataset] [-j threads] [-m model]
       [-s store] [-t step] [--spec spec] --module file[:factory]
       spirt-torch init [-fqv] [-j threads] [-m model] [-o file] [-S seed]
       [-s store] [--spec spec] --module file[:factory]
"""

HELP = """
  -b, --batch N      grad: samples per minibatch (default 64);
                     eval: per forward pass (default 256)
  -d, --dataset NAME data set (default train; eval: test)
  -f, --force        write binary data to a terminal
  -i, --serve        grad, warm: read "step [worker]" lines on stdin
  -j, --threads N    torch threads (default 1)
  -m, --model NAME   model name (key model/NAME@step)
      --module F     the module's file, and its factory (default model)
  -o, --output FILE  write the record to FILE (- stdout), not the store
  -S, --seed N       grad: minibatch seed; init: torch's seed (default 0)
  -s, --store PATH   store (default $SPIRT_STORE or ./spirt.db)
      --spec SPEC    the model's name field (default torch:NAME:P)
  -t, --step N       model step (eval: default the latest)
  -w, --worker N     worker id (default 0)
  -q, --quiet        no warnings
  -v, --verbose      say what runs, with timings
  -h, --help         this help
  -V, --version      print version
"""

# spirt(7)'s exit codes
EX_USAGE, EX_DATAERR, EX_NOINPUT, EX_UNAVAILABLE = 64, 65, 66, 69
EX_SOFTWARE, EX_CANTCREAT, EX_IOERR = 70, 73, 74
NOSTEP = 2**64 - 1
MAXSTEP, MAXWORKER = 2**64 - 2, 2**32 - 2

SHORT = "b:d:fhij:m:o:qS:s:t:Vvw:"
LONG = ["batch=", "dataset=", "force", "help", "serve", "threads=",
        "model=", "module=", "output=", "quiet", "seed=", "store=", "spec=",
        "step=", "version", "verbose", "worker="]


class Fail(Exception):
    """A failure: exit code and the message after "spirt-torch: "."""

    def __init__(self, code, msg):
        super().__init__(msg)
        self.code, self.msg = code, msg


def warn(msg):
    sys.stderr.write("%s: %s\n" % (PROG, msg))
    sys.stderr.flush()


def usage_error(msg=None):
    if msg:
        warn(msg)
    sys.stderr.write(USAGE)
    sys.exit(EX_USAGE)


def number(s, what, lo, hi):
    """s as a decimal in [lo, hi], no sign, no leading zero; else 64."""
    if not re.fullmatch(r"0|[1-9][0-9]*", s or "") or \
            not lo <= int(s) <= hi:
        raise Fail(EX_USAGE, "%s %.40r: not a number in %d..%d" %
                   (what, s, lo, hi))
    return int(s)


class Opts:
    def __init__(self):
        self.cmd, self.batch, self.dataset, self.force = None, None, None, 0
        self.serve, self.threads, self.model = 0, None, None
        self.module, self.output, self.seed = None, None, None
        self.spec = None
        self.store, self.step, self.worker = None, None, None
        self.quiet, self.verbose = 0, 0


def parse(argv):
    import getopt

    o = Opts()
    try:
        opts, args = getopt.gnu_getopt(argv, SHORT, LONG)
    except getopt.GetoptError as e:
        usage_error(str(e))
    for k, v in opts:
        if k in ("-h", "--help"):
            sys.stdout.write(USAGE + HELP)
            sys.exit(0)
        if k in ("-V", "--version"):
            print("%s %s" % (PROG, __version__))
            sys.exit(0)
    if not args or args[0] not in ("grad", "eval", "init"):
        usage_error("expected grad, eval or init" if not args else
                    "%.40s: no such command (grad, eval or init)" % args[0])
    o.cmd = args[0]
    if len(args) > 1:
        usage_error("%.40s: unexpected operand" % args[1])
    allowed = {"grad": "bdfijmoSstwqv", "eval": "bdjmstqv",
               "init": "fjmoSsqv"}[o.cmd]
    for k, v in opts:
        short = {"--" + n.rstrip("="): "-" + s for n, s in zip(
            LONG, "bdfhijmMoqSsPtVvw")}.get(k, k)
        if short not in ("-M", "-P") and short[1] not in allowed:
            usage_error("%s: not an option of %s" % (k, o.cmd))
        if short == "-b":
            o.batch = number(v, "-b", 1, 2**31 - 1)
        elif short == "-d":
            o.dataset = v
        elif short == "-f":
            o.force = 1
        elif short == "-i":
            o.serve = 1
        elif short == "-j":
            o.threads = number(v, "-j", 1, 1024)
        elif short == "-m":
            o.model = v
        elif short == "-M":
            o.module = v
        elif short == "-o":
            o.output = v
        elif short == "-S":
            o.seed = number(v, "-S", 0, 2**64 - 1)
        elif short == "-s":
            o.store = v
        elif short == "-P":
            if not v or len(v.encode()) > 255:
                usage_error("--spec: 1 to 255 bytes")
            o.spec = v
        elif short == "-t":
            o.step = number(v, "-t", 0, MAXSTEP)
        elif short == "-w":
            o.worker = number(v, "-w", 0, MAXWORKER)
        elif short == "-q":
            o.quiet = 1
        elif short == "-v":
            o.verbose += 1
    if o.module is None:
        usage_error("--module: the module's file is required")
    env = os.environ
    if o.model is None:
        o.model = env.get("SPIRT_MODEL")
    if not o.model:
        usage_error("-m: the model's name is required (or SPIRT_MODEL)")
    if not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}", o.model):
        usage_error("-m %.40r: not a model name ([A-Za-z0-9._-])" % o.model)
    if o.threads is None:
        o.threads = number(env.get("SPIRT_THREADS") or "1",
                           "SPIRT_THREADS", 1, 1024)
    if o.seed is None:
        o.seed = number(env.get("SPIRT_SEED") or "0", "SPIRT_SEED", 0,
                        2**64 - 1)
    if o.worker is None:
        o.worker = number(env.get("SPIRT_WORKER") or "0", "SPIRT_WORKER",
                          0, MAXWORKER)
    if o.batch is None:
        o.batch = 256 if o.cmd == "eval" else number(
            env.get("SPIRT_BATCH") or "64", "SPIRT_BATCH", 1, 2**31 - 1)
    if o.dataset is None:
        o.dataset = env.get("SPIRT_DATASET_TEST") or "test" \
            if o.cmd == "eval" else env.get("SPIRT_DATASET") or "train"
    if o.cmd == "grad" and o.step is None and not o.serve:
        s = env.get("SPIRT_STEP")
        if s is None:
            usage_error("grad: -t is required (or --serve)")
        o.step = number(s, "SPIRT_STEP", 0, MAXSTEP)
    if o.serve and o.output is not None:
        usage_error("-o: not with --serve (each answer's record goes to "
                    "the store)")
    return o


# ---- the module ----

def load_module(spec):
    """(factory, loss function, NAME) of "file.py[:factory]"."""
    import importlib.util

    path, _, fname = spec.partition(":")
    fname = fname or "model"
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", fname):
        raise Fail(EX_USAGE, "--module %.60s: %r: not a Python name" %
                   (spec, fname))
    base = os.path.basename(path)
    stem = base[:-3] if base.endswith(".py") else base
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", stem):
        raise Fail(EX_USAGE, "--module %.60s: the file's name is not a "
                   "name ([A-Za-z0-9._-])" % path)
    if not os.path.isfile(path):
        raise Fail(EX_NOINPUT, "--module %s: no such file" % path)
    try:
        ms = importlib.util.spec_from_file_location(
            "spirt_user_" + re.sub(r"\W", "_", stem), path)
        mod = importlib.util.module_from_spec(ms)
        ms.loader.exec_module(mod)
    except Exception as e:
        raise Fail(EX_DATAERR, "--module %s: %s: %s" %
                   (path, type(e).__name__, e))
    factory = getattr(mod, fname, None)
    if not callable(factory):
        raise Fail(EX_DATAERR, "--module %s: defines no function %s()" %
                   (path, fname))
    lossf = getattr(mod, "loss", None)
    if lossf is not None:
        lossf = lossf()
    else:
        import torch.nn.functional as F
        lossf = F.cross_entropy
    return factory, lossf, stem if fname == "model" else stem + "." + fname


def keep_memory():
    """glibc's malloc, left alone, gives a step's freed tensors back to
    the kernel (its dynamic mmap and trim thresholds) and takes them
    again as fresh zeroed pages the next step: thousands of page faults
    a step, a third of a small model's step.  A warm function keeps
    what it freed for the next step instead: freed memory stays in the
    heap, and blocks up to 32 MiB come from it.  Not when the
    environment tunes malloc itself."""
    if not sys.platform.startswith("linux") or any(
            v.startswith("MALLOC_") for v in os.environ) or \
            "malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(-1, 1 << 30)        # M_TRIM_THRESHOLD
    mallopt(-3, 32 << 20)       # M_MMAP_THRESHOLD, its largest


class Net:
    """The user's module, its spec and its parameters' layout."""

    def __init__(self, o):
        keep_memory()
        # Debian's torch does not pass set_num_threads() on to OpenBLAS
        # (its Linear layers): the environment must, before it loads
        for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[v] = str(o.threads)
        import torch

        torch.set_num_threads(o.threads)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass
        self.torch = torch
        factory, self.lossf, name = load_module(o.module)
        torch.manual_seed(o.seed if o.cmd == "init" else 0)
        try:
            self.mod = factory()
        except Exception as e:
            raise Fail(EX_DATAERR, "--module %s: %s(): %s: %s" % (
                o.module, getattr(factory, "__name__", "model"),
                type(e).__name__, e))
        if not isinstance(self.mod, torch.nn.Module):
            raise Fail(EX_DATAERR, "--module %s: the factory gave a %s, "
                       "not a torch.nn.Module" % (o.module,
                                                  type(self.mod).__name__))
        self.params = list(self.mod.parameters())
        for p in self.params:
            p.data = p.data.float().contiguous()
        self.nparams = sum(p.numel() for p in self.params)
        self.training = False
        self.viewed, self.zeros, self.flat = {}, None, None
        self.lent = None
        # the state: the floating-point buffers, in order; an integer
        # one (num_batches_tracked, a count) stays the module's own
        self.buffers = [b for b in self.mod.buffers()
                        if b.is_floating_point()]
        for b in self.buffers:
            b.data = b.data.float().contiguous()
        self.nstate = sum(b.numel() for b in self.buffers)
        self.spec = o.spec or "torch:%s:%d" % (name, self.nparams)

    def vector(self, ts=None):
        """The parameters (or the tensors ts: the buffers) as one float32
        numpy vector [P]."""
        t = self.torch
        ts = self.params if ts is None else ts
        if not ts:
            return t.zeros(0).numpy()
        with t.no_grad():
            return t.cat([p.reshape(-1) for p in ts]).numpy()

    def load(self, vec, ts=None):
        """Set the parameters (or the tensors ts) from the float32 vector
        vec [P]."""
        if ts is None and self.lend(vec):
            return
        at = 0
        for v in self.views(self.params if ts is None else ts):
            v[...] = vec[at:at + v.size].reshape(v.shape)
            at += v.size

    def lend(self, vec):
        """Make the parameters views of vec's memory (a writable float32
        vector [P]: a record in the buffer the model's answer is read
        into, kept from step to step) rather than copy it: the next
        step's answer, read into the same buffer, is then in the
        parameters with no copy.  Made once a buffer, again if vec is
        somewhere else (a longer header, a larger buffer); the memory
        stays alive while the parameters view it, so the same address
        is the same memory.  False (copy it) if vec cannot be viewed."""
        import numpy

        if not (vec.flags.writeable and vec.flags.c_contiguous and
                vec.dtype == numpy.float32 and vec.ndim == 1 and
                vec.size == self.nparams):
            return False
        addr = vec.__array_interface__["data"][0]
        if addr % vec.itemsize:
            return False
        if self.lent != addr:
            flat, at = self.torch.from_numpy(vec), 0
            for p in self.params:
                n = p.numel()
                p.data = flat[at:at + n].view(p.shape)
                at += n
            self.lent = addr
        return True

    def views(self, ts):
        """NumPy views of the memory of the tensors ts, kept (made again
        if one of them has other memory now): a step's copy into them
        costs half torch's copy_ (its dispatch, after a backward pass)."""
        ptrs = [p.data_ptr() for p in ts]
        c = self.viewed.get(id(ts))
        if c is None or c[0] != ptrs:
            c = self.viewed[id(ts)] = (ptrs, [p.detach().numpy()
                                              for p in ts])
        return c[1]

    def finite(self, g):
        """Whether every value of the float32 vector g is finite.  Its
        sum of squares first, g.g (BLAS's dot, 1 us for 16K values; with
        a zero stride it is a loop a value at a time, 10 us; numpy's sum
        6-11 us): an inf or NaN makes it inf or NaN (squares are not
        negative: no inf - inf), so a finite g.g is a finite g.  One
        that is not may be finite values whose squares overflow: then
        one dot with zeros (a view of one zero, no memory) rather than
        isfinite's array: inf or NaN times 0 is NaN, any finite value
        times 0 is 0."""
        import numpy

        if math.isfinite(numpy.dot(g, g)):
            return True
        if self.zeros is None or self.zeros.size != g.size:
            self.zeros = numpy.broadcast_to(numpy.float32(0), g.shape)
        return math.isfinite(numpy.dot(g, self.zeros))

    def gradient(self, x, y, seed):
        """(mean loss, flat float32 gradient) on the batch x, y; the
        gradient's buffer is the next call's too."""
        t = self.torch
        # dropout: the same bits for the same job.  The CPU generator's
        # seed, what torch.manual_seed sets for it: that also queues the
        # seed for CUDA with the caller's stack formatted, each step
        t.default_generator.manual_seed(seed)
        if t.cuda.is_initialized():
            t.cuda.manual_seed_all(seed)
        # training mode, set once (a walk of the modules, 50 us a step
        # after the backward pass has emptied the caches)
        if not self.training or not self.mod.training:
            self.mod.train()
            self.training = True
        # the gradient in one buffer kept: each parameter's .grad a
        # tensor of its own (its own version counter) over its place in
        # it, filled with -0.0, which backward adds the gradient to in
        # place (with .grad set and no graph of the gradient, autograd
        # adds rather than replaces): -0.0 + g is g, bit for bit (+0.0 +
        # -0.0 would be +0.0).  No flattening after the pass.
        if self.flat is None:
            import numpy

            self.flat = numpy.empty(self.nparams, numpy.float32)
            self.grads, at = [], 0
            for p in self.params:
                n = p.numel()
                self.grads.append(t.from_numpy(
                    self.flat[at:at + n]).view(p.shape))
                at += n
        self.flat.fill(-0.0)
        for p, g in zip(self.params, self.grads):
            p.grad = g
        before = [g._version for g in self.grads]
        loss = self.lossf(self.mod(t.from_numpy(x)),
                          t.from_numpy(y.astype("int64")))
        loss.backward()
        at = 0
        for p, g, v in zip(self.params, self.grads, before):
            n = g.numel()
            if p.grad is not g:     # the module's own doing
                self.flat[at:at + n] = 0 if p.grad is None else \
                    p.grad.detach().reshape(-1).numpy()
            elif g._version == v:   # a parameter the loss does not use
                self.flat[at:at + n] = 0
            at += n
        return loss.item(), self.flat

    def state_in(self, store, key, step):
        """Load the model's state, the record under key, into the
        buffers (a model without buffers: nothing read)."""
        import numpy

        if not self.nstate:
            return
        r = records(store.get(key), key, verify=False)
        if len(r) != 1 or r[0].step != step or r[0].name != self.spec or \
                r[0].array.dtype != numpy.dtype("<f4") or \
                r[0].array.size != self.nstate:
            raise Fail(EX_DATAERR, "%s: not f32 [%d] of %s at step %d: "
                       "not this module's state" % (key, self.nstate,
                                                    self.spec, step))
        self.load(r[0].array, self.buffers)

    def state_out(self, store, key, step, **meta):
        """Write the buffers as the record under key (none without)."""
        import numpy
        from spirt import tensor

        if not self.nstate:
            return
        v = self.vector(self.buffers)
        if not numpy.isfinite(v).all():
            raise Fail(EX_DATAERR, "%s: state not finite" % key)
        store.put(key, tensor.encode(v.astype("<f4", copy=False),
                                     name=self.spec, step=step, **meta))


# ---- the store, through spirt-store ----

def wide(*files):
    """Pipes of 1 MiB (Linux; where allowed): a gradient's put, a
    batch's answer, written at once rather than 64 KiB at a time, each
    a switch to the other side and back."""
    try:
        import fcntl

        for f in files:
            fcntl.fcntl(f.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031),
                        1 << 20)
    except (OSError, ImportError):
        pass


class Store:
    def __init__(self, o):
        self.args = ["spirt-store"] + (["-s", o.store] if o.store else [])
        self.env = dict(os.environ)
        # SPIRT_PARENT is ours: spirt-store would watch our parent
        self.env.pop("SPIRT_PARENT", None)
        self.verbose, self.quiet = o.verbose, o.quiet
        self.pipe = None
        self.bufs = {}

    def start(self, *args, stdin=None):
        if self.verbose:
            warn("+ %s" % " ".join(self.args + list(args)))
        try:
            p = subprocess.Popen(self.args + list(args), env=self.env,
                                 stdin=stdin, stdout=subprocess.PIPE)
        except OSError as e:
            raise Fail(EX_UNAVAILABLE, "spirt-store: %s" % e.strerror)
        if args[:1] == ("pipe",):
            wide(p.stdin, p.stdout)
        return p

    @staticmethod
    def finish(p, data=None):
        """The output of process p; its exit code raised (its message is
        on stderr already)."""
        out, _ = p.communicate(data)
        if p.returncode != 0:
            code = p.returncode if 0 < p.returncode < 126 else EX_SOFTWARE
            raise Fail(code, None)
        return out

    def run(self, *args, data=None):
        p = self.start(*args, stdin=None if data is None else
                       subprocess.PIPE)
        return self.finish(p, data)

    # one `spirt-store pipe` a function: its requests answered over one
    # open store, no process started a request (spirt-store(1))

    def ask(self, line, *data):
        """Send one request to the pipe (started if need be): line, then
        the bytes of data (a put's record), in one write (each write
        wakes the pipe: a switch to it and back).  A pipe that ended
        between requests (its end closed: nothing of this one written)
        is reported and another started."""
        parts = [memoryview(line.encode() + b"\n")] + [
            memoryview(d).cast("B") for d in data]
        if self.pipe is None:
            self.pipe = self.start("pipe", stdin=subprocess.PIPE)
        sent = self.send(parts)
        if sent < 0:
            # it ended between requests: gone (killed if still exiting)
            code = self.pipe.poll()
            if code is None:
                code = self.close(kill=True)
            else:
                self.close()
            if not self.quiet:
                warn("spirt-store pipe: %s; another started" % (
                    "exited %d" % code if code >= 0 else
                    "killed by signal %d" % -code))
            self.pipe = self.start("pipe", stdin=subprocess.PIPE)
            sent = self.send(parts)
        if sent != sum(len(q) for q in parts):
            self.lost()

    def send(self, parts):
        """Write the buffers parts to the pipe: the bytes written, -1 if
        its end was closed before any."""
        fd, sent = self.pipe.stdin.fileno(), 0
        parts = list(parts)
        try:
            while parts:
                k = os.writev(fd, parts)
                sent += k
                while parts and k >= len(parts[0]):
                    k -= len(parts[0])
                    parts.pop(0)
                if parts:
                    parts[0] = parts[0][k:]
        except BrokenPipeError:
            return -1 if sent == 0 else sent
        except OSError:
            pass
        return sent

    def answer(self, slot=None):
        """The bytes of the pipe's next answer, or its code raised: a new
        bytearray, or with slot the buffer kept under that name, its
        bytes until the next answer into it (either way the records
        decoded from them are writable)."""
        if self.pipe is None:
            raise Fail(EX_SOFTWARE, "spirt-store pipe: not started")
        line = self.pipe.stdout.readline(64)
        m = re.fullmatch(rb"(0|[1-9][0-9]{0,2}) (0|[1-9][0-9]{0,15})\n",
                         line)
        if not m:
            self.lost(line)
        code, n = int(m.group(1)), int(m.group(2))
        buf = self.bufs.get(slot)
        if buf is None or len(buf) < n:
            buf = bytearray(n)
            if slot is not None:
                self.bufs[slot] = buf
        view = memoryview(buf)[:n]
        buf = view
        while view:
            k = self.pipe.stdout.readinto(view)
            if not k:
                self.lost()
            view = view[k:]
        if code:
            raise Fail(code, None)      # its message is on stderr
        return buf

    def get(self, key):
        """The bytes of the records under key, through the pipe."""
        self.ask("get %s" % key)
        return self.answer()

    def put(self, key, *data):
        """Put the bytes of data under key, through the pipe."""
        self.ask("put %s %d" % (key, sum(len(d) for d in data)), *data)
        self.answer()

    def putf32(self, key, vec, name, step, origin, samples, loss,
               revision=None):
        """Put the float32 vector vec under key as the record of that
        metadata, through the pipe: its raw bytes sent, the record
        encoded and checksummed there (the bytes tensor.encode makes);
        a name the request line cannot carry, or a subnormal loss (its
        strtod says ERANGE), goes as a whole record."""
        import sys
        import numpy
        from spirt import tensor

        vec = numpy.ascontiguousarray(vec, dtype="<f4")
        if "\n" in name or "\0" in name or \
                0 < abs(loss) < sys.float_info.min:
            self.put(key, *tensor.encode_parts(
                vec, name=name, step=step, origin=origin, samples=samples,
                loss=loss, revision=revision))
            return
        self.ask("putf32 %s %d %d %d %d %r %s %s" % (
            key, vec.nbytes, step, origin, samples, float(loss),
            "-" if revision is None else revision, name), vec)
        self.answer()

    def lost(self, line=b""):
        """The pipe ended or said what it cannot: gone, reported; the next
        request starts another."""
        code = self.close(kill=True)
        if line:
            raise Fail(EX_SOFTWARE, "spirt-store pipe: answer \"%s\": not "
                       "\"code length\"" % shown(line.rstrip(b"\n")))
        if 0 < code < 126:
            raise Fail(code, None)      # it said why on stderr
        raise Fail(EX_UNAVAILABLE, "spirt-store pipe: %s" % (
            "ended" if code == 0 else "killed by signal %d" % -code))

    def close(self, kill=False):
        """End the pipe: its stdin closed (and killed, with kill); its
        exit code (-signal), None if there is no pipe."""
        p, self.pipe = self.pipe, None
        if p is None:
            return None
        try:
            p.stdin.close()
        except OSError:
            pass
        if kill:
            p.kill()
        return p.wait()


def records(data, what, verify=True):
    """The records in data, back to back; their arrays are views of data
    (writable if data is a bytearray).  verify=False: no checksums, for
    an answer of the pipe (it verified them, tensor.decode)."""
    from spirt import tensor

    at, out = 0, []
    try:
        while at < len(data):
            r, at = tensor.decode(data, at, verify)
            out.append(r)
        return out
    except (tensor.RecordError, KeyError, ValueError) as e:
        raise Fail(EX_DATAERR, "%s: %s" % (what, e))


def check_model(net, r, key, step):
    import numpy

    if r.step != step:
        raise Fail(EX_DATAERR, "%s: record says step %s, want %d: wrong "
                   "or unknown step" % (key, "none" if r.step is None else
                                        r.step, step))
    if r.name != net.spec:
        raise Fail(EX_DATAERR, "%s: model %r, the module's is %r" %
                   (key, r.name, net.spec))
    if r.array.dtype != numpy.dtype("<f4") or r.array.ndim != 1 or \
            r.array.size != net.nparams:
        raise Fail(EX_DATAERR, "%s: not f32 [%d]" % (key, net.nparams))


def mix(*v):
    """A 63-bit seed of the words v (splitmix64 steps)."""
    m = 2**64 - 1
    z = 0
    for x in v:
        z = (z ^ x) + 0x9E3779B97F4A7C15 & m
        z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9 & m
        z = (z ^ z >> 27) * 0x94D049BB133111EB & m
        z ^= z >> 31
    return z >> 1


def write_out(path, data, force):
    """data to path (- stdout) by a temporary name, synced and renamed."""
    if path == "-":
        if sys.stdout.isatty() and not force:
            raise Fail(EX_USAGE, "-o -: standard output is a terminal "
                       "(-f writes binary data there)")
        try:
            # unbuffered: nothing left for the interpreter's exit to
            # flush (and fail on) again
            view = memoryview(data)
            while view:
                view = view[os.write(1, view):]
        except OSError as e:
            raise Fail(EX_IOERR, "standard output: %s" % e.strerror)
        return
    # a device, FIFO or socket (/dev/null, a named pipe) is written in
    # place, as lib/io.c's spirt_publish_open does: a file renamed over
    # it would replace it
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        try:
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(
                    errno.EISDIR))
            with open(path, "wb") as f:
                f.write(data)
        except OSError as e:
            raise Fail(EX_CANTCREAT if e.errno in (
                errno.ENOENT, errno.EACCES, errno.EROFS, errno.ENOTDIR,
                errno.EISDIR) else EX_IOERR, "%s: %s" % (path, e.strerror))
        return
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise Fail(EX_CANTCREAT if e.errno in (
            errno.ENOENT, errno.EACCES, errno.EROFS, errno.ENOTDIR,
            errno.EISDIR) else EX_IOERR, "%s: %s" % (path, e.strerror))


# ---- grad ----

def grad_one(o, net, store, step, worker):
    """Compute and write the gradient of (step, worker); its answer."""
    import time
    import numpy
    from spirt import tensor

    t0 = time.monotonic()
    key = "model/%s@%d" % (o.model, step)
    out = "grad/%d/%d" % (step, worker)
    # both asked at once, in one write: the store reads the batch while
    # we read the model; each into a buffer of its own, kept for the
    # next step
    store.ask("get %s\nbatch %d %d %d %d %s" % (key, step, worker, o.batch,
                                               o.seed, o.dataset))
    try:
        mdata = store.answer("model")
    except Fail as e:
        try:                # the batch's, not to leave it in the pipe
            if store.pipe is not None:
                store.answer()
        except Fail:
            pass
        raise e
    bdata = store.answer("batch")
    m = records(mdata, key, verify=False)
    if len(m) != 1:
        raise Fail(EX_DATAERR, "%s: not one record" % key)
    check_model(net, m[0], key, step)
    b = records(bdata, "batch %d/%d" % (step, worker), verify=False)
    if len(b) != 2 or b[0].array.dtype != numpy.dtype("<f4") or \
            b[1].array.dtype != numpy.dtype("<i4") or \
            b[0].array.shape[:1] != b[1].array.shape:
        raise Fail(EX_DATAERR, "batch %d/%d: not x f32 [B, ...] then y "
                   "i32 [B]" % (step, worker))
    net.state_in(store, "mstate/%s@%d" % (o.model, step), step)
    t1 = time.monotonic()
    net.load(m[0].array)
    loss, g = net.gradient(b[0].array, b[1].array, mix(o.seed, step,
                                                       worker))
    t2 = time.monotonic()
    # the gradient's values checked here only if something is written
    # before it or not by the pipe (its putf32 refuses them, 65)
    if not math.isfinite(loss) or ((o.output is not None or net.nstate)
                                   and not net.finite(g)):
        raise Fail(EX_DATAERR, "%s: loss %g: gradient not finite" %
                   (key, loss))
    # the state the pass measured, before the gradient that makes the
    # step's inputs complete (with -o: the gradient only)
    if o.output is None:
        net.state_out(store, "state/%d/%d" % (step, worker), step,
                      origin=worker, samples=int(b[1].array.size))
    samples = int(b[1].array.size)
    if o.output is not None:
        rec = tensor.encode(g.astype("<f4", copy=False), name=net.spec,
                            step=step, origin=worker, samples=samples,
                            loss=loss, revision=b[0].revision)
        write_out(o.output, rec, o.force)
    else:
        store.putf32(out, g, net.spec, step=step, origin=worker,
                     samples=samples, loss=loss, revision=b[0].revision)
    if o.verbose:
        warn("%s: read %.1f ms, computed %.1f ms, wrote %.1f ms" % (
            out, 1e3 * (t1 - t0), 1e3 * (t2 - t1),
            1e3 * (time.monotonic() - t2)))
    return "step=%d worker=%d samples=%d loss=%.9g" % (
        step, worker, b[1].array.size, loss)


def shown(line):
    s = "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else
                "\\x%02x" % c for c in line[:40])
    return s + ("..." if len(line) > 40 else "")


def _number(line, at):
    """(value, end) of the decimal at line[at:], as lib/serve.c reads
    it: "0" or a non-zero digit then digits; None if there is none."""
    m = re.match(rb"[0-9]+", line[at:])
    if not m or (m.group()[0:1] == b"0" and len(m.group()) > 1):
        return None
    return int(m.group()), at + m.end()


def request(line):
    """(step, worker or None) of a request line (no LF), or the reason it
    is refused (a str), in lib/serve.c's words."""
    if not line:
        return "empty line, expected a step"
    if len(line) > 255:
        return "line longer than 255 bytes"
    r = _number(line, 0)
    if r is None:
        return "expected a step (a decimal number, no leading zero)"
    step, at = r
    if step > MAXSTEP:
        return "step above %d" % MAXSTEP
    if at == len(line):
        return step, None
    if line[at:at + 1] != b" ":
        return "junk after the step"
    r = _number(line, at + 1)
    if r is None:
        return "expected a worker after the step"
    w, at = r
    if w > MAXWORKER:
        return "worker above %d" % MAXWORKER
    if at != len(line):
        return "junk after the worker"
    return step, w


stopped, idle = False, False


class Stop(Exception):
    pass


def on_stop(sig, frame):
    """SIGINT, SIGTERM: the request under way is answered first; a wait
    for the next one ends at once (a read is retried after a handler)."""
    global stopped
    stopped = True
    if idle:
        raise Stop()


def serve(o, net, store):
    """The warm protocol (docs/contracts.md): one answer line each."""
    global idle
    worst, n = 0, 0
    inp = sys.stdin.buffer
    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGTERM, on_stop)
    while not stopped:
        try:
            idle = True
            if stopped:
                break
            line = inp.readline(257)
            long_ = len(line) == 257 and not line.endswith(b"\n")
            while long_:    # read to its LF: its tail is no request
                more = inp.readline(65536)
                if not more or more.endswith(b"\n"):
                    break
        except Stop:
            break
        except OSError as e:
            warn("stdin: %s" % e.strerror)
            return EX_IOERR
        finally:
            idle = False
        if not line:
            break
        n += 1
        if long_:
            req = "line longer than 255 bytes"
        elif not line.endswith(b"\n"):
            req = "no newline at the end of input"
            line = line[:256]
        else:
            line = line[:-1]
            req = request(line)
        if isinstance(req, str):
            warn('stdin:%d: "%s": %s' % (n, shown(line), req))
            code, ans = EX_USAGE, "error=%d" % EX_USAGE
        else:
            step, w = req
            w = o.worker if w is None else w
            try:
                ans, code = grad_one(o, net, store, step, w), 0
            except Fail as e:
                if e.msg:
                    warn(e.msg)
                code, ans = e.code, "step=%d worker=%d error=%d" % (
                    step, w, e.code)
        worst = max(worst, code)
        try:
            sys.stdout.write(ans + "\n")
            sys.stdout.flush()
        except OSError as e:
            warn("standard output: %s" % e.strerror)
            return EX_IOERR
    return worst


def parent_watch():
    """SPIRT_PARENT: end (SIGTERM) when that process does, as spirt(7)."""
    s = os.environ.pop("SPIRT_PARENT", None)
    if not s:
        return
    pid = number(s, "SPIRT_PARENT", 2, 2**31 - 1)
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(1, signal.SIGTERM, 0, 0, 0) != 0:   # PDEATHSIG
            raise Fail(71, "SPIRT_PARENT: prctl PR_SET_PDEATHSIG: %s" %
                       os.strerror(ctypes.get_errno()))
    if os.getppid() != pid:
        raise Fail(75, "SPIRT_PARENT %s: that process, which started "
                   "this one, is gone" % s)


def cmd_grad(o):
    net, store = Net(o), Store(o)
    try:
        if o.serve:
            return serve(o, net, store)
        answer = grad_one(o, net, store, o.step, o.worker)
    finally:
        store.close()
    if o.verbose:
        warn(answer)
    return 0


# ---- eval ----

def cmd_eval(o):
    import numpy

    net, store = Net(o), Store(o)
    t = net.torch
    if o.step is None:
        keys = store.run("ls", "model/%s@" % o.model).decode().split()
        steps = [int(k.rsplit("@", 1)[1]) for k in keys
                 if re.fullmatch(r"model/.*@(0|[1-9][0-9]*)", k)]
        if not steps:
            raise Fail(EX_NOINPUT, "model/%s@: no version in the store" %
                       o.model)
        o.step = max(steps)
    key = "model/%s@%d" % (o.model, o.step)
    m = records(store.run("get", key), key)
    check_model(net, m[0], key, o.step)
    net.load(m[0].array)
    net.state_in(store, "mstate/%s@%d" % (o.model, o.step), o.step)
    ikey = "data/%s/info" % o.dataset
    info = records(store.run("get", ikey), ikey)[0].array
    if info.dtype != numpy.dtype("<i8") or info.shape != (4,):
        raise Fail(EX_DATAERR, "%s: not i64 [4]" % ikey)
    nshards, nclass = int(info[0]), int(info[2])
    n, lsum = 0, 0.0
    right = numpy.zeros(nclass, numpy.int64)
    seen = numpy.zeros(nclass, numpy.int64)
    net.mod.eval()
    for k in range(nshards):
        xk, yk = "data/%s/%d/x" % (o.dataset, k), "data/%s/%d/y" % (
            o.dataset, k)
        x = records(store.run("get", xk), xk)[0].array
        y = records(store.run("get", yk), yk)[0].array
        if x.dtype == numpy.dtype("u1"):
            x = x.astype(numpy.float32) / numpy.float32(255)
        for i in range(0, y.size, o.batch):
            xb = t.from_numpy(numpy.array(x[i:i + o.batch], numpy.float32))
            yb = t.from_numpy(y[i:i + o.batch].astype(numpy.int64))
            with t.no_grad():
                z = net.mod(xb)
                lsum += float(net.lossf(z, yb)) * yb.numel()
            pred = z.argmax(1).numpy()
            yn = yb.numpy()
            numpy.add.at(seen, yn, 1)
            numpy.add.at(right, yn[pred == yn], 1)
            n += yb.numel()
    if n == 0:
        raise Fail(EX_DATAERR, "%s: no samples" % ikey)
    print("model=%s\nspec=%s\nstep=%d\ndataset=%s\nsamples=%d\nloss=%g\n"
          "accuracy=%.4f" % (o.model, net.spec, o.step, o.dataset, n,
                             lsum / n, right.sum() / n))
    for c in range(nclass):
        print("accuracy.%d=%.4f" % (c, right[c] / seen[c] if seen[c] else
                                    0.0))
    return 0


# ---- init ----

def cmd_init(o):
    from spirt import tensor

    net = Net(o)
    rec = tensor.encode(net.vector().astype("<f4", copy=False),
                        name=net.spec, step=0)
    if o.output is not None:
        write_out(o.output, rec, o.force)
    else:
        # model@0 is never overwritten; its state follows it (a run
        # before it is there fails on the state missing, 66)
        store = Store(o)
        store.run("put", "-n", "model/%s@0" % o.model, "-", data=rec)
        net.state_out(store, "mstate/%s@0" % o.model, 0)
    if not o.quiet:
        warn("model/%s@0: %s, %d parameters" % (o.model, net.spec,
                                                net.nparams))
    return 0


def main(argv):
    try:
        o = parse(argv)
        parent_watch()
        return {"grad": cmd_grad, "eval": cmd_eval, "init": cmd_init}[
            o.cmd](o)
    except Fail as e:
        if e.msg:
            warn(e.msg)
        return e.code
    except ImportError as e:
        warn("%s: %s (Debian: python3-numpy, python3-torch)" % (
            sys.executable, e))
        return EX_UNAVAILABLE


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
