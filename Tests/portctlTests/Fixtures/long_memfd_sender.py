#!/usr/bin/env python3
"""A hostile sender of a large component, written from portd-protocol(7).

  long_memfd_sender.py SOCKET NAME LENGTH

Looks NAME up through portd at SOCKET (examples/portd_client.py), then sends
its port one request (REPLY_EXPECTED) with one large component announcing
LENGTH bytes: a sealed memfd twice as long, whose announced first half is a
hole and whose second half is written. Its allocated total (st_blocks)
covers LENGTH, the announced range does not. Waits for the answer and
prints one line: "answered" or "closed" (the receiver refused the record
and closed the connection), then the memfd's allocated bytes before sending
and after the answer (reading the hole allocates it).
"""
import fcntl
import os
import socket
import struct
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "examples"))
import portd_client as pc  # noqa: E402


def main():
    path, name, length = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with pc.Client(path, timeout=10) as client:
        right = client.lookup(name).port
    fd = os.memfd_create("long", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 2 * length)
    os.pwrite(fd, b"x" * length, length)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    before = os.fstat(fd).st_blocks * 512
    record = pc.HEADER.pack(pc.MAGIC, 1, pc.FLAG_REPLY_EXPECTED, 1, 1) + pc.ENTRY.pack(pc.KIND_LARGE, length)
    pc.send_record(right, record, [fd])
    right.settimeout(20)
    data = right.recv(65536)
    after = os.fstat(fd).st_blocks * 512
    print("%s %d %d" % ("answered" if data else "closed", before, after), flush=True)
    return 0


sys.exit(main())
