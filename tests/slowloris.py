#!/usr/bin/env python3
# tests/slowloris.py - hold connections to an HTTP server by dribbling
# bytes, for tests/53-slowloris.bats: every other connection sends its
# request headers a byte at a time, never ending them; the others send
# the whole headers of a POST and then its declared body a byte at a
# time; each one byte a second.  A connection the server closes is
# opened again at once, as a real attacker would.
#
#   slowloris.py HOST PORT N SECONDS
#
# Keeps N connections open for SECONDS, then prints one line and exits
# 0: "opened=O refused=R cut=C held=H longest=S": O connections the
# kernel accepted in all; R of them closed by the server within a second
# (over a limit); C closed by it later, S seconds the longest of those
# lived; H still open at the end.
import select
import socket
import sys
import time

host, port, n, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    float(sys.argv[4])
start = time.monotonic()
live, ends, opened, k = [], [], 0, 0


def connect():
    global opened, k
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect((host, port))
        if k % 2:
            s.send(b"POST /v1/msg HTTP/1.1\r\nHost: h\r\n"
                   b"Content-Length: 100000\r\n\r\n")
    except OSError:
        s.close()
        time.sleep(0.1)
        return
    s.setblocking(False)
    live.append({"s": s, "t0": time.monotonic(), "last": 0.0,
                 "byte": b"x" if k % 2 else b"a"})
    if not k % 2:
        s.send(b"GET /v1/id HTTP/1.1\r\nHost: h\r\nX-Slow: ")
    opened += 1
    k += 1


while time.monotonic() - start < secs:
    while len(live) < n and time.monotonic() - start < secs:
        if ends and ends[-1] < 1.0:
            time.sleep(0.05)        # refused at once: not a flood
        connect()
    r, _, _ = select.select([c["s"] for c in live], [], [], 0.2)
    now = time.monotonic()
    for c in list(live):
        end = False
        if c["s"] in r:
            # closed, or answered (a refusal): done with it either way
            try:
                c["s"].recv(4096)
            except OSError:
                pass
            end = True
        elif now - c["last"] >= 1.0:
            c["last"] = now
            try:
                c["s"].send(c["byte"])
            except OSError:
                end = True
        if end:
            ends.append(now - c["t0"])
            c["s"].close()
            live.remove(c)

refused = sum(1 for e in ends if e < 1.0)
cut = [e for e in ends if e >= 1.0]
print("opened=%d refused=%d cut=%d held=%d longest=%.1f" %
      (opened, refused, len(cut), len(live), max(cut) if cut else 0.0))
for c in live:
    c["s"].close()
