#!/usr/bin/python3
# tests/vhash.py - the values' hash of docs/protocol.md ("Values' hashes",
# lib/vhash.h), written apart from lib/vhash.c from the page alone, with
# Python's hashlib: the reference the tests check spirt's against.
#   python3 tests/vhash.py [FILE]     prints the hash of FILE (or stdin), hex
#   python3 tests/vhash.py --kat      the known answer of test_crypto.c
import hashlib
import struct
import sys

PIECE = 32768


def vhash(b):
    leaves = b"".join(hashlib.sha256(b[i:i + PIECE]).digest()
                      for i in range(0, len(b), PIECE))
    return hashlib.sha256(b"SPIRT-TREE-SHA256" +
                          struct.pack("<QI", len(b), PIECE) +
                          leaves).hexdigest()


def kat():
    # test_crypto.c's input: byte i is (i * 131 + (i >> 9)) mod 256
    n = 3 * PIECE + 1000
    return vhash(bytes((i * 131 + (i >> 9)) & 255 for i in range(n)))


if __name__ == "__main__":
    if sys.argv[1:] == ["--kat"]:
        print(kat())
    elif len(sys.argv) > 1:
        with open(sys.argv[1], "rb") as f:
            print(vhash(f.read()))
    else:
        print(vhash(sys.stdin.buffer.read()))
