#!/usr/bin/python3
# tests/chaos_check.py - the invariants tests/chaos.sh checks after each
# fault, over the stores of a run's peers (read with spirt-store, never
# written).  One process for the run: it keeps the ledger of what it saw.
#
#   chaos_check.py MODEL CKPT LOGDIR STORE...
#
# It reads commands on stdin, one a line, and answers each with one line:
#   check   every store opens (spirt-store ls exits 0); for each store its
#           model/MODEL@t versions each have step t, opt/MODEL@t (t > 0)
#           with step t and count t (the optimiser has seen exactly t
#           updates: no step applied twice, none skipped), and a gap in
#           the versions only above a durable checkpoint (t % CKPT == 0),
#           or next to a version the store caught up (its driver said
#           "caught up from ...: model/MODEL@t" in LOGDIR/s<i>.*.err);
#           each version
#           hashes (SHA-256 of the value) as that version does in every
#           other store, now and at any earlier check.
#           Answer: "ok N0 N1 ..." (each store's newest step, -1 for none)
#           or "fail MESSAGE".
#   final   check, then every signed digest of every store (digest/t/p,
#           docs/protocol.md): for each step, one model hash in all of
#           them, and the hash of model@t where a check saw it; every step
#           0..N-1 of the newest N has a digest (some round took it).
#           Answer: "ok steps=N rounds=R partial=K" (K rounds with fewer
#           than all peers in some digest) or "fail MESSAGE".
import glob
import os
import re
import subprocess
import sys
import time

# the values' hash of the digests (docs/protocol.md), from the page alone
from vhash import vhash

model, ckpt, logdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
stores = sys.argv[4:]
ledger = {}     # (kind, t) -> (hash, store that first had it)
seen = {}       # (store, key) -> hash
catchups = {}   # store index -> set of steps caught up


def sh(args, data=False):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    out = p.stdout if data else p.stdout.decode(errors='replace')
    return p.returncode, out, p.stderr.decode(errors='replace').strip()


def read_catchups():
    # (a join step the driver announced counts too: "joining at step J"
    # comes before its catch-up, which may store model@J and be ended,
    # with the driver killed, before the driver says it caught up)
    pat = re.compile(r'caught up from \S+: model/%s@(\d+)|'
                     r'joining at step (\d+)' % re.escape(model))
    for i in range(len(stores)):
        s = catchups.setdefault(i, set())
        for f in glob.glob(os.path.join(logdir, 's%d.*.err' % i)):
            try:
                for m in pat.finditer(open(f, errors='replace').read()):
                    s.add(int(m.group(1) or m.group(2)))
            except OSError:
                pass


class Fail(Exception):
    pass


def versions(i, store):
    rc, out, err = sh(['spirt-store', '-q', '-s', store, 'ls'])
    if rc != 0:
        raise Fail('store %s does not open: spirt-store ls exit %d: %s'
                   % (store, rc, err))
    mv, ov, dg = {}, {}, 0
    for line in out.splitlines():
        f = line.split('\t')
        if len(f) < 5:
            raise Fail('store %s: spirt-store ls: bad line %r' % (store, line))
        k = f[0]
        for pre, d in (('model/%s@' % model, mv), ('opt/%s@' % model, ov)):
            if k.startswith(pre):
                t = int(k[len(pre):])
                if f[4] != str(t):
                    raise Fail('store %s: %s has step %s' % (store, k, f[4]))
                d[t] = k
        if k.startswith('digest/'):
            dg += 1
    return mv, ov


def counts(store, keys):
    """count= of each key that still exists (pruned meanwhile: absent)"""
    if not keys:
        return {}
    rc, out, err = sh(['spirt-store', '-q', '-s', store, 'show'] + keys)
    res, key = {}, None
    for line in out.splitlines():
        if line.startswith('key='):
            key = line[4:]
        elif line.startswith('count=') and key:
            res[key] = line[6:]
    return res


def hash_of(store, key):
    rc, out, err = sh(['spirt-store', '-q', '-s', store, 'get', '-f', key],
                      data=True)
    if rc != 0:
        return None     # pruned since the listing
    return vhash(out)


def check():
    read_catchups()
    newest = []
    for i, store in enumerate(stores):
        mv, ov = versions(i, store)
        c = counts(store, [ov[t] for t in sorted(ov)])
        for t, k in sorted(ov.items()):
            if k in c and c[k] != str(t):
                raise Fail('store %s: %s has count %s: %s updates applied '
                           'for step %d' % (store, k, c[k], c[k], t))
        for t in sorted(mv):
            if t > 0 and t not in ov:
                # (the update writes both in one transaction, a catch-up
                # the state first; pruning takes both at once)
                if ('model/%s@%d' % (model, t)) in mv.values():
                    mv2, ov2 = versions(i, store)
                    if t in mv2 and t not in ov2:
                        raise Fail('store %s: model@%d without opt@%d'
                                   % (store, t, t))
        ts = sorted(mv)
        for a, b in zip(ts, ts[1:]):
            # (a gap's lower end: the newest durable version, which
            # --keep leaves, a checkpoint or a version caught up (put
            # durable); its upper end may be a version caught up)
            if b == a + 1 or a % ckpt == 0 or a in catchups[i] or \
                    b in catchups[i]:
                continue
            # (the driver says it caught up once the versions are in:
            # give its words a moment)
            for _ in range(30):
                read_catchups()
                if a in catchups[i] or b in catchups[i]:
                    break
                time.sleep(0.1)
            if a not in catchups[i] and b not in catchups[i]:
                raise Fail('store %s: model@%d follows model@%d: steps %d..%d '
                           'skipped (no checkpoint, no catch-up)'
                           % (store, b, a, a + 1, b - 1))
        for kind, d in (('model', mv), ('opt', ov)):
            for t, k in d.items():
                if (store, k) in seen:
                    continue
                h = hash_of(store, k)
                if h is None:
                    continue
                seen[(store, k)] = h
                if (kind, t) in ledger and ledger[(kind, t)][0] != h:
                    raise Fail('%s@%d differs: %s in %s, %s in %s'
                               % (kind, t, h[:16], store,
                                  ledger[(kind, t)][0][:16],
                                  ledger[(kind, t)][1]))
                ledger.setdefault((kind, t), (h, store))
        newest.append(max(mv) if mv else -1)
    return 'ok ' + ' '.join(str(n) for n in newest)


def dump(env):
    p = subprocess.run(['mdb_dump', env], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    if p.returncode != 0:
        raise Fail('mdb_dump %s: %s' % (env, p.stderr.decode().strip()))
    return p.stdout.decode().split('\n')


def digests(store):
    """{(t, peer): model hash} of every digest/ value in STORE"""
    res = {}
    envs = [store]
    if os.path.isdir(os.path.join(store, 'scratch')):
        envs.append(os.path.join(store, 'scratch'))
    for env in envs:
        lines = dump(env)
        for h in [j for j, l in enumerate(lines) if l == 'HEADER=END']:
            i = h + 1
            while i + 1 < len(lines) and lines[i].startswith(' '):
                k = bytes.fromhex(lines[i].strip()).decode(errors='replace')
                if k.startswith('digest/'):
                    v = bytes.fromhex(lines[i + 1].strip())
                    d = v[v.find(b'SPDG'):]
                    _, t, p = k.split('/')
                    n = int.from_bytes(d[16:20], 'little')
                    res.setdefault((int(t), p), (d[152:184].hex(), n))
                i += 2
    return res


def final():
    r = check()
    newest = [int(x) for x in r.split()[1:]]
    n = min(newest)
    steps = {}
    partial = set()
    peers = set()
    for store in stores:
        for (t, p), (h, e) in digests(store).items():
            steps.setdefault(t, {}).setdefault(h, set()).add((store, p))
            peers.add(p)
            if e < len(stores) - 1:
                partial.add(t)
    for t, hs in sorted(steps.items()):
        if len(hs) > 1:
            raise Fail('step %d: the digests name %d models: %s' % (
                t, len(hs), '; '.join('%s by %s' % (h[:16], sorted(w))
                                      for h, w in hs.items())))
        h = next(iter(hs))
        if ('model', t) in ledger:
            # (the digest's hash is SHA-256 of the whole value)
            if ledger[('model', t)][0] != h:
                raise Fail('step %d: the digests name model %s, %s held '
                           '%s' % (t, h[:16], ledger[('model', t)][1],
                                   ledger[('model', t)][0][:16]))
    missing = [t for t in range(n) if t not in steps]
    if missing:
        raise Fail('steps without a digest (no round took them): %s'
                   % ' '.join(map(str, missing[:20])))
    for t in range(n):
        if len({p for h in steps[t].values() for _, p in h}) < len(stores):
            partial.add(t)
    return 'ok steps=%d rounds=%d partial=%d' % (n, len(steps), len(partial))


for line in sys.stdin:
    cmd = line.strip()
    try:
        if cmd == 'check':
            print(check(), flush=True)
        elif cmd == 'final':
            print(final(), flush=True)
        elif cmd == 'quit':
            break
        else:
            print('fail unknown command %r' % cmd, flush=True)
    except Fail as e:
        print('fail %s' % e, flush=True)
    except subprocess.TimeoutExpired as e:
        print('fail %s: no answer in %s s' % (' '.join(e.cmd), e.timeout),
              flush=True)
