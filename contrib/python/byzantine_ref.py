"""byzantine_ref.py - NumPy references for spirt's attacks and robust rules.

Independent of the C library: the tests (tests/31-attack.bats,
tests/30-agg.bats) compare spirt-attack and spirt-agg against these, and
contrib/python/make_byz_fixtures.py writes the committed fixtures with
them.  Everything is computed in float64 from the float32 inputs.

    X: (W, N) array of a step's gradients, rows in canonical order
       (by origin), origins[i] the origin of row i.
"""
import math
from statistics import NormalDist

import numpy as np

M64 = (1 << 64) - 1


# ---- splitmix64, as lib/rng.h ----
class SM64:
    def __init__(self, seed):
        self.s = seed & M64

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next() >> 11) * (1.0 / 9007199254740992.0)

    def below(self, n):
        return ((self.next() >> 32) * n) >> 32


def seed_mix(a, b, c):
    r = SM64(a)
    r.s = r.next() ^ (b & M64)
    r.s = r.next() ^ (c & M64)
    return r.next()


# ---- attacks (spirt-attack(1)) ----
def signflip(g, s=10.0):
    return -s * np.asarray(g, np.float64)


def scale(g, s):
    return s * np.asarray(g, np.float64)


def gauss(n, sigma, seed, step, origin):
    """N(0, sigma^2): Box-Muller over splitmix64 pairs, u1 in (0, 1]."""
    r = SM64(seed_mix(seed, step, origin))
    out = np.empty(n)
    for j in range(0, n, 2):
        u1 = 1.0 - r.uniform()
        u2 = r.uniform()
        m = sigma * math.sqrt(-2.0 * math.log(u1))
        out[j] = m * math.cos(2 * math.pi * u2)
        if j + 1 < n:
            out[j + 1] = m * math.sin(2 * math.pi * u2)
    return out


def alie_z(n, f):
    """Baruch et al. 2019: s = floor(n/2 + 1) - f, z = Phi^-1((n-s)/n)."""
    s = n // 2 + 1 - f
    if f == 0 or s < 1 or s >= n:
        return None
    return NormalDist().inv_cdf((n - s) / n)


def alie(X, f, z=None):
    X = np.asarray(X, np.float64)
    if z is None:
        z = alie_z(X.shape[0], f)
    sd = X.std(0, ddof=1) if X.shape[0] > 1 else np.zeros(X.shape[1])
    return X.mean(0) - z * sd


def ipm(X, eps=0.1):
    return -eps * np.asarray(X, np.float64).mean(0)


# ---- a Byzantine peer's aggregate (spirt-attack -a) ----
def agg_attack(kind, y, X=None, p=None, seed=0, step=0):
    """What a Byzantine peer publishes instead of its honest aggregate y,
    from what it knows: y, and for ALIE the W gradients X of the step it
    averaged (their spread over sqrt(W) is that of honest aggregates)."""
    y = np.asarray(y, np.float64)
    if kind == "signflip":
        return -(10.0 if p is None else p) * y
    if kind == "scale":
        return p * y
    if kind == "ipm":
        return -(0.1 if p is None else p) * y
    if kind == "gauss":
        return gauss(y.shape[0], 100.0 if p is None else p, seed, step,
                     0xFFFFFFFF)
    if kind == "alie":
        X = np.asarray(X, np.float64)
        z = 1.0 if p is None else p
        return y - z * X.std(0, ddof=1) / math.sqrt(X.shape[0])
    raise ValueError(kind)


# ---- rules (spirt-agg(1)) ----
def cclip(X, tau, iters=1, center=None, f=0):
    """Karimireddy, He, Jaggi 2021: v += mean_i (x_i - v) min(1, tau/|x_i - v|).

    tau None: each iteration's radius is the (f+1)-th largest distance
    |x_i - v| (He, Karimireddy, Jaggi 2022's adaptive choice)."""
    X = np.asarray(X, np.float64)
    v = np.zeros(X.shape[1]) if center is None else np.array(center, np.float64)
    for _ in range(iters):
        d = np.linalg.norm(X - v, axis=1)
        t = tau if tau is not None else np.sort(d)[::-1][min(f, len(d) - 1)]
        c = np.where(d > t, t / np.where(d > 0, d, 1), 1.0)
        v = v + (c[:, None] * (X - v)).mean(0)
    return v


def scclip(X, own, tau, iters=1, f=0):
    """Self-centred clipping (He, Karimireddy, Jaggi 2022, ClippedGossip
    with uniform weights): x_own + mean_j clip(x_j - x_own, tau), the own
    input among the X (its difference is 0)."""
    return cclip(X, tau, iters, np.asarray(X, np.float64)[own], f)


def momenta(steps, beta):
    """Worker momentum (Karimireddy, He, Jaggi 2021), as spirt-agg
    --worker-momentum keeps it: steps is a list of {worker: gradient}, one
    per step; worker w's momentum at step t is (1 - beta) g + beta m of its
    step t-1, or g when it had none then.  Returns the list of
    {worker: momentum}."""
    out, prev = [], {}
    for gs in steps:
        cur = {}
        for w, g in gs.items():
            g = np.asarray(g, np.float64)
            cur[w] = g if w not in prev else (1 - beta) * g + beta * prev[w]
        out.append(cur)
        prev = cur
    return out


def bucket_perm(w, seed, step):
    """Fisher-Yates over 0..w-1 from splitmix64(seed_mix(seed, step, 0))."""
    r = SM64(seed_mix(seed, step, 0))
    p = list(range(w))
    for i in range(w - 1, 0, -1):
        j = r.below(i + 1)
        p[i], p[j] = p[j], p[i]
    return p


def buckets(X, s, seed, step):
    """(bucket means, members): rows permuted, cut into groups of s."""
    X = np.asarray(X, np.float64)
    p = bucket_perm(X.shape[0], seed, step)
    groups = [p[k:k + s] for k in range(0, len(p), s)]
    return np.stack([X[g].mean(0) for g in groups]), groups


def trim(X, frac):
    X = np.sort(np.asarray(X, np.float64), 0)
    k = int(math.floor(frac * X.shape[0] + 1e-9))
    return X[k:X.shape[0] - k].mean(0)


def median(X):
    return np.median(np.asarray(X, np.float64), 0)


def krum_select(X, f, m=1):
    """Indices of the m rows with the lowest Krum scores (ties: lower index)."""
    X = np.asarray(X, np.float64)
    w = X.shape[0]
    d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    score = [np.sort(np.delete(d[i], i))[:w - f - 2].sum() for i in range(w)]
    return sorted(sorted(range(w), key=lambda i: (score[i], i))[:m])
