#!/usr/bin/env python3
"""A name-server client in another process and language, written from portd-protocol(7).

  name_client.py register SOCKET NAME
        REGISTER NAME; print the outcome (below) on stderr; on "registered",
        keep the name (and its listening socket) until killed.
  name_client.py checkin-receive SOCKET NAME N
        CHECKIN NAME (a declared port); accept connections on the listening socket
        it gets and print the first component of each of N messages on stdout; exit 0.
  name_client.py activated
        a service started by portd for a declared port (Exec=): take the listening
        socket from LISTEN_FDS (descriptor 3, LISTEN_PID must be this process),
        accept one connection, print "NAME: FIRST-COMPONENT" for its first
        message and whether PORTD_SOCKET is set; exit 0.
  name_client.py as-user UID GIDS SOCKET REQUEST NAME
        become UID with primary gid UID and the supplementary groups GIDS (comma
        separated, "-" for none), send REQUEST (register or checkin) for NAME and
        print the outcome on stdout.
  name_client.py as-uid UID SOCKET
        drop to UID (and gid UID), send STATUS, print the reply's fields on stdout.
  name_client.py queue SOCKET NAME N
        open N connections, each sending REGISTER NAME with a reply port of its own
        (a socketpair); print "queued N" on stdout once every reply was "queued", and
        hold the connections until killed.

Every connection opens with HELLO (protocol=1.0), sent without waiting for
its reply: requests pipeline. The outcome of a reply is an ERROR's "error="
word, REGISTER's "result=", or "ok" for any other REPLY.
"""
import os
import resource
import select
import signal
import socket
import struct
import sys

FLAG_REPLY_PORT, FLAG_REPLY_EXPECTED = 0x01, 0x02
KIND_DATA, KIND_PORT = 1, 2
REGISTER, STATUS, CHECKIN, HELLO = 0xFFFF0002, 0xFFFF0001, 0xFFFF0008, 0xFFFF0009
REPLY, ERROR = 0xFFFF0200, 0xFFFF0201


def encode(msgid, strings, flags=FLAG_REPLY_EXPECTED, serial=1):
    data = [s.encode() for s in [f"serial={serial}"] + strings]
    header = b"port" + struct.pack("<BBHI", 1, flags, len(data), msgid)
    table = b"".join(struct.pack("<B3xI", KIND_DATA, len(d)) for d in data)
    return header + table + b"".join(data)


def decode(record):
    """Returns (msgid, components): strings for data, None for a port."""
    _, flags, count, msgid = struct.unpack("<BBHI", record[4:12])
    comps, at = [], 12 + 8 * count
    for i in range(count):
        kind, length = struct.unpack("<B3xI", record[12 + 8 * i:20 + 8 * i])
        if kind == KIND_DATA:
            comps.append(record[at:at + length].decode())
            at += length
        else:
            comps.append(None)
    return msgid, comps


def outcome(msgid, comps):
    fields = dict(c.split("=", 1) for c in comps if c is not None)
    if msgid == ERROR:
        return fields.get("error", "?")
    return fields.get("result", "ok")


def connect(path):
    """A connection that said HELLO (its reply is read by `receive`)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    s.send(encode(HELLO, ["protocol=1.0"], serial=1))
    return s


def receive(s, serial):
    """The record that answers `serial`, and its descriptors."""
    while True:
        record, fds, _, _ = socket.recv_fds(s, 262144, 4)
        msgid, comps = decode(record)
        if comps and comps[0] == f"serial={serial}":
            return msgid, comps, fds
        for fd in fds:
            os.close(fd)


def request(path, msgid, strings):
    s = connect(path)
    s.send(encode(msgid, strings, serial=2))
    msgid, comps, fds = receive(s, 2)
    return s, (outcome(msgid, comps), comps[1:]), fds


def main():
    verb = sys.argv[1]
    if verb == "register":
        control, reply, fds = request(sys.argv[2], REGISTER, ["name=" + sys.argv[3]])
        print(reply[0], file=sys.stderr, flush=True)
        if reply[0] != "registered":
            return 1
        signal.pause()  # hold the name until killed
        return 0
    if verb == "checkin-receive":
        control, reply, fds = request(sys.argv[2], CHECKIN, ["name=" + sys.argv[3]])
        if reply[0] != "ok":
            print(reply[0], flush=True)
            return 1
        listening = socket.socket(fileno=fds[0])
        listening.setblocking(True)
        remaining = int(sys.argv[4])
        while remaining > 0:
            conn, _ = listening.accept()
            while remaining > 0:
                record = conn.recv(65536)
                if not record:
                    break
                print(decode(record)[1][0], flush=True)
                remaining -= 1
        return 0
    if verb == "activated":
        if os.environ.get("LISTEN_PID") != str(os.getpid()) or os.environ.get("LISTEN_FDS") != "1":
            print("bad LISTEN_PID/LISTEN_FDS", flush=True)
            return 1
        # The socket is shared with portd and stays non-blocking (portd.conf(5)).
        listening = socket.socket(fileno=3)
        select.select([listening], [], [])
        conn, _ = listening.accept()
        conn.setblocking(True)
        record = conn.recv(65536)
        name = os.environ.get("LISTEN_FDNAMES")
        has_socket = "PORTD_SOCKET set" if os.environ.get("PORTD_SOCKET") else "no PORTD_SOCKET"
        print(f"{name}: {decode(record)[1][0]} ({has_socket})", flush=True)
        return 0
    if verb == "queue":
        # Two descriptors a queued client: more than a soft limit of 1,024
        # allows (Debian's default for a login), so the soft limit goes up
        # to the hard one first.
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        held = []
        for i in range(int(sys.argv[4])):
            control = connect(sys.argv[2])
            mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            flags = FLAG_REPLY_EXPECTED | FLAG_REPLY_PORT
            socket.send_fds(control, [encode(REGISTER, ["name=" + sys.argv[3]], flags, serial=2)], [theirs.fileno()])
            theirs.close()
            msgid, comps, fds = receive(control, 2)
            if outcome(msgid, comps) != "queued":
                print(i, *comps, flush=True)
                return 1
            held.append((control, mine))
        print("queued", len(held), flush=True)
        signal.pause()
        return 0
    if verb == "as-user":
        uid = int(sys.argv[2])
        os.setgroups([] if sys.argv[3] == "-" else [int(g) for g in sys.argv[3].split(",")])
        os.setgid(uid)
        os.setuid(uid)
        msgid = {"register": REGISTER, "checkin": CHECKIN}[sys.argv[5]]
        control, reply, fds = request(sys.argv[4], msgid, ["name=" + sys.argv[6]])
        print(reply[0], flush=True)
        return 0
    if verb == "as-uid":
        uid = int(sys.argv[2])
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        control, reply, fds = request(sys.argv[3], STATUS, [])
        print("\n".join([reply[0]] + [c or "" for c in reply[1]]), flush=True)
        return 0
    return 2


sys.exit(main())
