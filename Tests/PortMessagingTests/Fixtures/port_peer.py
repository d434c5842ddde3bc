#!/usr/bin/env python3
"""A port peer in another process and language, written from portd-protocol(7).

Descriptor 3 is a send right (a connected SOCK_SEQPACKET socket) to a port.
  port_peer.py send N TAG        send N messages: msgid = 0..N-1, one data component TAG
  port_peer.py checkin NAME      check in (msgid 100, reply port = a new port of ours,
                                 component NAME), then wait for one message on our port,
                                 print its first component, exit 0
  port_peer.py checkin-and-die NAME   check in, then exit at once (the port dies with us)
  port_peer.py checkin-and-wait NAME  check in, print "ready", then wait forever (to be killed)
  port_peer.py unsealed-memfd    send a large-data component whose memfd is not sealed
  port_peer.py sparse-memfd N    send a large-data component of N bytes: a sealed memfd
                                 made that size by ftruncate alone (all hole, costing us nothing)
  port_peer.py long-memfd N      send a large-data component of N bytes: a sealed memfd of
                                 2N whose first N (the announced range) are a hole and whose
                                 last N are written
  port_peer.py opath-large       send a large-data component whose descriptor is O_PATH
  port_peer.py opath-checkin NAME  check in with an O_PATH descriptor as the reply port
"""
import os
import socket
import struct
import sys

MAGIC = b"port"
VERSION = 1
FLAG_REPLY_PORT = 0x01
KIND_DATA = 1


def encode(msgid, components, reply_port=False):
    header = MAGIC + struct.pack("<BBHI", VERSION, FLAG_REPLY_PORT if reply_port else 0, len(components), msgid)
    table = b"".join(struct.pack("<B3xI", KIND_DATA, len(c)) for c in components)
    return header + table + b"".join(components)


def decode(record):
    magic, (version, flags, count, msgid) = record[:4], struct.unpack("<BBHI", record[4:12])
    assert magic == MAGIC and version == VERSION, record[:12]
    comps, at = [], 12 + 8 * count
    for i in range(count):
        kind, length = struct.unpack("<B3xI", record[12 + 8 * i:20 + 8 * i])
        if kind == KIND_DATA:
            comps.append(record[at:at + length])
            at += length
    return msgid, comps


def main():
    right = socket.socket(fileno=3)
    # O_NONBLOCK belongs to the open file, which the port's owner created non-blocking.
    right.setblocking(True)
    verb = sys.argv[1]
    if verb == "send":
        n, tag = int(sys.argv[2]), sys.argv[3].encode()
        for i in range(n):
            right.send(encode(i, [tag]))
        return 0
    if verb in ("checkin", "checkin-and-die", "checkin-and-wait"):
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        socket.send_fds(right, [encode(100, [sys.argv[2].encode()], reply_port=True)], [theirs.fileno()])
        theirs.close()
        if verb == "checkin-and-die":
            os._exit(0)
        if verb == "checkin-and-wait":
            print("ready", flush=True)
            while True:
                mine.recv(65536)
        msgid, comps = decode(mine.recv(65536))
        print(comps[0].decode() if comps else "", flush=True)
        return 0
    if verb == "unsealed-memfd":
        fd = os.memfd_create("unsealed", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.write(fd, b"x" * 4096)
        header = MAGIC + struct.pack("<BBHI", VERSION, 0, 1, 7)
        table = struct.pack("<B3xI", 3, 4096)  # kind 3: large data in a sealed memfd (it is not)
        socket.send_fds(right, [header + table], [fd])
        return 0
    if verb == "sparse-memfd":
        import fcntl
        size = int(sys.argv[2])
        fd = os.memfd_create("sparse", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        header = MAGIC + struct.pack("<BBHI", VERSION, 0, 1, 7)
        table = struct.pack("<B3xI", 3, size)
        socket.send_fds(right, [header + table], [fd])
        return 0
    if verb == "long-memfd":
        import fcntl
        size = int(sys.argv[2])
        fd = os.memfd_create("long", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, 2 * size)
        os.pwrite(fd, b"x" * size, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        header = MAGIC + struct.pack("<BBHI", VERSION, 0, 1, 7)
        table = struct.pack("<B3xI", 3, size)
        socket.send_fds(right, [header + table], [fd])
        return 0
    if verb == "opath-large":
        # O_PATH opens nothing: fcntl(F_GET_SEALS), mmap, everything but
        # fstat and close fail on it with EBADF.
        fd = os.open("/", os.O_PATH | os.O_CLOEXEC)
        header = MAGIC + struct.pack("<BBHI", VERSION, 0, 1, 7)
        table = struct.pack("<B3xI", 3, 4096)
        socket.send_fds(right, [header + table], [fd])
        return 0
    if verb == "opath-checkin":
        fd = os.open("/", os.O_PATH | os.O_CLOEXEC)
        socket.send_fds(right, [encode(100, [sys.argv[2].encode()], reply_port=True)], [fd])
        return 0
    return 2


sys.exit(main())
