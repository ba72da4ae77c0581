"""spirt_tensor.py - read and write spirt tensor records (spirt-tensor(5)).

A reference implementation, independent of the C library, for getting
records into and out of NumPy:

    import spirt_tensor
    with open("grad.rec", "rb") as f:
        for rec in spirt_tensor.read_records(f):
            print(rec.name, rec.step, rec.array.shape)

    spirt_tensor.write_record(sys.stdout.buffer, numpy.ones(3, "f4"), step=7)

decode(buf, at) reads a record from memory without a copy (its array a
view of buf), encode_parts() gives a record's header, payload (a view of
the array) and trailer to write one after the other.

Checksums are verified when the xxhash module (Debian: python3-xxhash) is
installed; without it records are still parsed, not verified.
"""
import struct
import sys

import numpy

try:
    import xxhash
except ImportError:  # pragma: no cover
    xxhash = None

MAGIC, ENDMAGIC, VERSION = b"SPRT", b"SPRE", 1
# version 2: flag bit 0 announces the revision field, 8 bytes after the
# name; a record without one is written as version 1
VERSION2, TF_REVISION = 2, 0x0001
FIXED = struct.Struct("<4sHBBIHHQQdIIQ")       # 56 bytes
NOSTEP, NOORIGIN = 2**64 - 1, 2**32 - 1
DTYPES = {1: "<f4", 2: "<f8", 3: "<i4", 4: "u1", 5: "<i8"}
CODES = {numpy.dtype(v).str if k != 4 else "|u1": k
         for k, v in DTYPES.items()}


class Record:
    def __init__(self, array, name="", step=None, origin=None, samples=0,
                 loss=float("nan"), count=0, revision=None):
        self.array, self.name, self.step, self.origin = array, name, step, origin
        self.samples, self.loss, self.count = samples, loss, count
        self.revision = revision        # assignment revision, or None

    def __repr__(self):
        return ("Record(name=%r, step=%r, origin=%r, revision=%r, dtype=%s, "
                "shape=%r)" % (self.name, self.step, self.origin,
                               self.revision, self.array.dtype,
                               self.array.shape))


class RecordError(ValueError):
    pass


def _fixed(buf, at):
    """The fixed header's fields at buf[at:], checked; the header's
    length at the end."""
    if len(buf) - at < FIXED.size:
        raise RecordError("truncated record (header)")
    v = FIXED.unpack_from(buf, at)
    magic, ver, dtype, rank, hlen, nlen, flags = v[:7]
    if magic != MAGIC:
        raise RecordError("bad magic")
    if ver not in (VERSION, VERSION2):
        raise RecordError("unsupported version %d" % ver)
    if flags & ~(TF_REVISION if ver == VERSION2 else 0):
        raise RecordError("unsupported flags %#x (version %d)" % (flags, ver))
    extra = 8 if flags & TF_REVISION else 0
    if hlen != FIXED.size + 8 * rank + nlen + (-nlen) % 8 + extra + 8:
        raise RecordError("corrupt record header (length)")
    return v


def decode(buf, at=0, verify=True):
    """(record, the offset after it) of the record at buf[at:], any
    bytes-like object.  Zero-copy: the record's array is a view of buf,
    writable when buf is (a bytearray).  verify=False skips the
    checksums, for bytes that were verified where they came from (an
    answer of spirt-store pipe, which verifies what it reads): the
    structure is checked either way."""
    (magic, ver, dtype, rank, hlen, nlen, flags, step, samples, loss,
     origin, count, plen) = _fixed(buf, at)
    mv = memoryview(buf).cast("B")
    p0 = at + hlen
    for end, what in ((p0, "header"), (p0 + plen, "payload"),
                      (p0 + plen + 16, "trailer")):
        if end > len(mv):
            raise RecordError("truncated record (%s)" % what)
    header = mv[at:p0]
    hsum = struct.unpack_from("<Q", header, hlen - 8)[0]
    if verify and xxhash and xxhash.xxh3_64_intdigest(header[:-8]) != hsum:
        raise RecordError("corrupt record header")
    dims = struct.unpack_from("<%dQ" % rank, header, FIXED.size)
    o = FIXED.size + 8 * rank
    name = bytes(header[o:o + nlen]).decode()
    revision = struct.unpack_from("<Q", header, hlen - 16)[0] \
        if flags & TF_REVISION else None
    payload = mv[p0:p0 + plen]
    trailer = mv[p0 + plen:p0 + plen + 16]
    if trailer[:4] != ENDMAGIC:
        raise RecordError("torn or interleaved record")
    if verify and xxhash and \
            xxhash.xxh3_64_intdigest(payload, seed=hsum) != \
            struct.unpack_from("<Q", trailer, 8)[0]:
        raise RecordError("payload checksum mismatch")
    a = numpy.frombuffer(payload, DTYPES[dtype]).reshape(dims)
    return Record(a, name, None if step == NOSTEP else step,
                  None if origin == NOORIGIN else origin, samples, loss, count,
                  revision), p0 + plen + 16


def _read(f, n, what):
    b = f.read(n)
    if len(b) != n:
        raise RecordError("truncated record (%s)" % what)
    return b


def read_record(f):
    """Next record from binary file f (anything with read(n)), or None at
    a clean end of stream."""
    fixed = f.read(FIXED.size)
    if not fixed:
        return None
    v = _fixed(fixed, 0)
    hlen, plen = v[4], v[12]
    buf = bytearray(fixed)
    buf += _read(f, hlen - FIXED.size, "header")
    buf += _read(f, plen, "payload")
    buf += _read(f, 16, "trailer")
    return decode(buf)[0]


def read_records(f):
    while True:
        r = read_record(f)
        if r is None:
            return
        yield r


def encode_parts(array, name="", step=None, origin=None, samples=0,
                 loss=float("nan"), count=0, revision=None):
    """(header, payload, trailer) of one record holding array (C order,
    little-endian), the payload a view of the array's memory when it
    can be: write them one after the other."""
    a = numpy.ascontiguousarray(array)
    code = CODES.get(a.dtype.str)
    if code is None:
        a = a.astype(a.dtype.newbyteorder("<"))
        code = CODES.get(a.dtype.str)
    if code is None:
        raise ValueError("unsupported dtype %s" % array.dtype)
    nb = name.encode()
    pad = (-len(nb)) % 8
    extra = 0 if revision is None else 8
    hlen = FIXED.size + 8 * a.ndim + len(nb) + pad + extra + 8
    payload = memoryview(a.reshape(-1).view(numpy.uint8))
    header = FIXED.pack(MAGIC, VERSION if revision is None else VERSION2,
                        code, a.ndim, hlen, len(nb),
                        0 if revision is None else TF_REVISION,
                        NOSTEP if step is None else step, samples, loss,
                        NOORIGIN if origin is None else origin, count,
                        len(payload))
    header += struct.pack("<%dQ" % a.ndim, *a.shape) + nb + b"\0" * pad
    if revision is not None:
        header += struct.pack("<Q", revision)
    if xxhash is None:
        raise RuntimeError("writing records needs python3-xxhash")
    hsum = xxhash.xxh3_64_intdigest(header)
    header += struct.pack("<Q", hsum)
    trailer = ENDMAGIC + b"\0" * 4 + struct.pack(
        "<Q", xxhash.xxh3_64_intdigest(payload, seed=hsum))
    return header, payload, trailer


def encode(array, *args, **meta):
    """The bytes of one record holding array (C order, little-endian);
    the arguments are encode_parts'."""
    return b"".join(encode_parts(array, *args, **meta))


def write_record(f, array, **meta):
    f.write(encode(array, **meta))


if __name__ == "__main__":
    # spirt_tensor.py FILE...: print every record's metadata and shape
    for path in sys.argv[1:] or ["-"]:
        with (sys.stdin.buffer if path == "-" else open(path, "rb")) as f:
            for i, r in enumerate(read_records(f)):
                print("%s: record %d: %r" % (path, i, r))
