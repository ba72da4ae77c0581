#!/usr/bin/python3
"""make_shard_fixtures.py - write the small spirt-shard test fixtures.

Run from the top of the tree with Debian's python3 (numpy):

    /usr/bin/python3 contrib/python/make_shard_fixtures.py [outdir]

Writes tests/data/shard/: tiny IDX files (plain and gzip) and broken ones,
CSV and LIBSVM files good and bad, and the expected shard contents
(*.exp) computed with a reference copy of spirt-shard's shuffle
(xoshiro256** seeded by splitmix64, Fisher-Yates from the end), so the
tests check the documented order, not just the C code against itself.
"""
import gzip
import os
import struct
import sys

import numpy as np

M64 = (1 << 64) - 1


class Rng:
    """xoshiro256** seeded with four splitmix64 outputs (see spirt-shard(1))."""

    def __init__(self, seed):
        x = seed & M64
        self.s = []
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & M64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
            self.s.append(z ^ (z >> 31))

    @staticmethod
    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & M64

    def next(self):
        s = self.s
        res = (self.rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = self.rotl(s[3], 45)
        return res

    def below(self, m):
        if m < 2:
            return 0
        lo = ((1 << 64) - m) % m        # 2^64 mod m
        while True:
            v = self.next()
            if v >= lo:
                return v % m


def permutation(n, seed):
    """order[k] = original index of the sample at position k."""
    order = list(range(n))
    r = Rng(seed)
    for i in range(n, 1, -1):
        j = r.below(i)
        order[i - 1], order[j] = order[j], order[i - 1]
    return order


def split(n, nshards):
    return [n // nshards + (k < n % nshards) for k in range(nshards)]


def idx_bytes(arr, type_code=0x08):
    head = bytes([0, 0, type_code, arr.ndim])
    head += b"".join(struct.pack(">I", d) for d in arr.shape)
    dt = {0x08: ">u1", 0x0C: ">i4", 0x0D: ">f4"}[type_code]
    return head + arr.astype(dt).tobytes()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def gz(data):
    # mtime 0: the same bytes on every run
    return gzip.compress(data, mtime=0)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/shard"
    os.makedirs(out, exist_ok=True)
    p = lambda name: os.path.join(out, name)

    # 10 images of 4x3 pixels; image i is all i*10+pixel, label i % 3
    n, rows, cols = 10, 4, 3
    img = np.array([[[(i * 10 + r * cols + c) % 256 for c in range(cols)]
                     for r in range(rows)] for i in range(n)], np.uint8)
    lab = np.array([i % 3 for i in range(n)], np.uint8)
    ib, lb = idx_bytes(img), idx_bytes(lab)
    write(p("tiny-images-idx3-ubyte"), ib)
    write(p("tiny-labels-idx1-ubyte"), lb)
    write(p("tiny-images-idx3-ubyte.gz"), gz(ib))
    write(p("tiny-labels-idx1-ubyte.gz"), gz(lb))
    # broken inputs
    write(p("trunc-images-idx3-ubyte.gz"), gz(ib)[:-12])
    write(p("short-images-idx3-ubyte"), ib[:-2 * rows * cols])
    write(p("long-images-idx3-ubyte"), ib + b"\0")
    write(p("badmagic-images-idx3-ubyte"), bytes([8, 3, 0, 0]) + ib[4:])
    write(p("short-labels-idx1-ubyte"), idx_bytes(lab[:9]))
    write(p("float-images-idx3-ubyte"), idx_bytes(img.astype(np.float32)
                                                  / 2, 0x0D))
    write(p("notgzip-images-idx3-ubyte.gz"), b"\x1f\x8b\x08\x00garbage!"
          + b"\0" * 40)

    # expected shards for -n 3 --seed 7: original index per shard row
    order = permutation(n, 7)
    with open(p("tiny.n3.seed7.exp"), "w") as f:
        at = 0
        for k, c in enumerate(split(n, 3)):
            part = order[at:at + c]
            f.write("shard %d: %s\n" % (k, " ".join(map(str, part))))
            f.write("labels %d: %s\n" % (k, " ".join(str(lab[i])
                                                       for i in part)))
            at += c
    # reference values the unit test checks against
    r = Rng(0)
    with open(p("rng.exp"), "w") as f:
        f.write("seed0 %s\n" % " ".join("%d" % r.next() for _ in range(3)))
        f.write("perm10seed7 %s\n" % " ".join(map(str, order)))

    # CSV: label first, header line, 6 samples of 3 features
    rows_ = [(i % 2, i, i * 0.5, -i) for i in range(6)]
    body = "".join("%d,%g,%g,%g\n" % r_ for r_ in rows_)
    write(p("tiny.csv"), ("label,a,b,c\n" + body).encode())
    write(p("tiny-nohdr.csv"), body.encode())
    write(p("tiny-last.csv"), ("a,b,c,label\r\n" + "".join(
        "%g,%g,%g,%d\r\n" % (a, b, c, l) for l, a, b, c in rows_)).encode())
    write(p("tiny.csv.gz"), gz(("label,a,b,c\n" + body).encode()))
    write(p("ragged.csv"), b"label,a,b\n0,1,2\n1,2,3\n0,1\n")
    write(p("nonnum.csv"), b"0,1,2\n1,2,x3\n")
    write(p("badlabel.csv"), b"0,1,2\n1.5,2,3\n")
    write(p("inf.csv"), b"0,1,2\n1,-inf,3\n")
    write(p("empty.csv"), b"label,a\n")

    # LIBSVM: 1-based, sparse, sorted; inferred dimension 5
    svm = ("1 1:0.5 3:2\n"
           "0 2:1 5:-1  # a comment\n"
           "\n"
           "2 4:3\n"
           "1\n")
    write(p("tiny.svm"), svm.encode())
    write(p("unsorted.svm"), b"1 1:1 3:1\n0 3:1 2:1\n")
    write(p("zero.svm"), b"1 0:1\n")
    write(p("badtok.svm"), b"1 1:1\n0 2=1\n")
    write(p("negative.svm"), b"1 1:1\n-1 2:1\n")


if __name__ == "__main__":
    main()
