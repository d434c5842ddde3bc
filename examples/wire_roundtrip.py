#!/usr/bin/env python3
"""Speak the port-message wire format from portd-protocol(7), without PortCore.

Written from the man page alone (man/portd-protocol.7), using only the
standard library. PortCore's tests run it to check the page against the code:

  wire_roundtrip.py [hex]
      Encode a few messages and print one line per message:
      "<name> <descriptor count> <record as hex>". No sockets involved.

  wire_roundtrip.py connect ADDRESS
      Connect to a port (ADDRESS is a path, or @name for an abstract
      socket), send message 7 with a reply port, a data component, a port
      component and a large component in a sealed memfd; then expect on the
      reply port message 8 from the peer, with the peer's credentials, a data
      component and our own port handed back, and message 9 through the port
      we sent. Prints "ok" and exits 0 when everything matched.
"""

import fcntl
import os
import socket
import struct
import sys

MAGIC = b"port"
VERSION = 1
FLAG_REPLY_PORT = 0x01
KIND_DATA, KIND_PORT, KIND_LARGE = 1, 2, 3
MAX_RECORD = 196608
MAX_FDS = 253


class WireError(Exception):
    pass


def encode(msgid, components, reply_port=None):
    """components: ("data", bytes) | ("port", fd) | ("large", memfd, length).
    Returns (record, descriptors in SCM_RIGHTS order)."""
    table, data, fds = b"", b"", []
    if reply_port is not None:
        fds.append(reply_port)
    for c in components:
        if c[0] == "data":
            table += struct.pack("<B3xI", KIND_DATA, len(c[1]))
            data += c[1]
        elif c[0] == "port":
            table += struct.pack("<B3xI", KIND_PORT, 0)
            fds.append(c[1])
        elif c[0] == "large":
            table += struct.pack("<B3xI", KIND_LARGE, c[2])
            fds.append(c[1])
        else:
            raise ValueError(c[0])
    flags = FLAG_REPLY_PORT if reply_port is not None else 0
    header = MAGIC + struct.pack("<BBHI", VERSION, flags, len(components), msgid)
    return header + table + data, fds


def decode(record, fds):
    """Returns (msgid, reply_port or None, components), checking what the
    page's VALIDATION section lists (with the default limits)."""
    if len(record) > MAX_RECORD:
        raise WireError("recordTooLarge")
    if len(record) < 12:
        raise WireError("truncated")
    if record[0:4] != MAGIC:
        raise WireError("badMagic")
    version, flags, n, msgid = struct.unpack_from("<BBHI", record, 4)
    if version != VERSION:
        raise WireError("unsupportedVersion")
    if flags & ~FLAG_REPLY_PORT:
        raise WireError("unknownFlags")
    if n > 1024:
        raise WireError("tooManyComponents")
    if len(record) < 12 + 8 * n:
        raise WireError("truncated")
    entries, expected = [], 12 + 8 * n
    needed = 1 if flags & FLAG_REPLY_PORT else 0
    for i in range(n):
        kind, r1, r2, r3, length = struct.unpack_from("<BBBBI", record, 12 + 8 * i)
        if r1 or r2 or r3:
            raise WireError("reservedBytesSet")
        if kind not in (KIND_DATA, KIND_PORT, KIND_LARGE):
            raise WireError("unknownComponentKind")
        if (kind == KIND_PORT and length != 0) or (kind == KIND_LARGE and length == 0):
            raise WireError("invalidComponentLength")
        if kind == KIND_DATA:
            expected += length
        else:
            needed += 1
        entries.append((kind, length))
    if needed > MAX_FDS:
        raise WireError("tooManyDescriptors")
    if len(fds) != needed:
        raise WireError("descriptorCountMismatch")
    if len(record) < expected:
        raise WireError("truncated")
    if len(record) > expected:
        raise WireError("trailingBytes")
    reply = fds[0] if flags & FLAG_REPLY_PORT else None
    d = 1 if reply is not None else 0
    at = 12 + 8 * n
    components = []
    for kind, length in entries:
        if kind == KIND_DATA:
            components.append(("data", record[at:at + length]))
            at += length
        elif kind == KIND_PORT:
            components.append(("port", fds[d]))
            d += 1
        else:
            components.append(("large", fds[d], length))
            d += 1
    return msgid, reply, components


def sealed_memfd(payload):
    fd = os.memfd_create("wire-roundtrip", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view):]
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    return fd


def receive(sock):
    """One record with its descriptors and the sender's credentials
    (the socket must have SO_PASSCRED)."""
    ucred = struct.calcsize("iII")
    data, ancillary, flags, _ = sock.recvmsg(
        MAX_RECORD, socket.CMSG_SPACE(MAX_FDS * 4) + socket.CMSG_SPACE(ucred))
    if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
        raise WireError("truncated record or control data")
    fds, creds = [], None
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += list(struct.unpack("%di" % (len(payload) // 4), payload[:len(payload) // 4 * 4]))
        elif level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            creds = struct.unpack("iII", payload[:ucred])
    return data, fds, creds


SAMPLES = [
    ("empty", 42, [], None),
    ("checkin", 100, [("data", b"worker")], 7),
    ("mixed", 0x01020304, [("data", b"hi"), ("port", 11), ("data", b""), ("large", 12, 65536)], 10),
    ("python", 0xCAFE, [("data", b"from python"), ("data", bytes(range(256)))], None),
]


def print_hex():
    for name, msgid, components, reply in SAMPLES:
        record, fds = encode(msgid, components, reply)
        # Decoding our own output must give back what went in.
        assert decode(record, fds) == (msgid, reply, components), name
        print(name, len(fds), record.hex())


def large_payload():
    return bytes(i % 251 for i in range(100000))


def expect(condition, what):
    if not condition:
        raise WireError("unexpected: " + what)


def roundtrip(address):
    if address.startswith("@"):
        address = "\0" + address[1:]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.settimeout(20)
    sock.connect(address)

    reply_mine, reply_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    port_mine, port_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for s in (reply_mine, port_mine):
        s.settimeout(20)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    memfd = sealed_memfd(large_payload())

    record, fds = encode(7, [("data", b"hello from python"),
                             ("port", port_theirs.fileno()),
                             ("large", memfd, 100000)],
                         reply_port=reply_theirs.fileno())
    expect(socket.send_fds(sock, [record], fds) == len(record), "short send")
    # The peer has its own copies now.
    reply_theirs.close()
    port_theirs.close()
    os.close(memfd)

    # Message 9 through the port we sent.
    data, fds, creds = receive(port_mine)
    msgid, reply, components = decode(data, fds)
    expect(msgid == 9 and reply is None, "message 9")
    expect(components == [("data", b"via your port")], "message 9 components %r" % (components,))
    expect(creds is not None and creds[0] == os.getppid(), "credentials of message 9: %r" % (creds,))

    # Message 8 on the reply port: data, and our port handed back.
    data, fds, creds = receive(reply_mine)
    msgid, reply, components = decode(data, fds)
    expect(msgid == 8 and reply is None, "message 8")
    expect(creds is not None and creds[0] == os.getppid(), "credentials of message 8: %r" % (creds,))
    expect(len(components) == 2 and components[0] == ("data", b"reply:hello from python"),
           "message 8 components %r" % (components,))
    expect(components[1][0] == "port", "message 8 second component")
    returned = socket.socket(fileno=components[1][1])
    # The right we got back leads to our own port.
    record, _ = encode(10, [("data", b"loop")])
    socket.send_fds(returned, [record], [])
    data, fds, _ = receive(port_mine)
    expect(decode(data, fds) == (10, None, [("data", b"loop")]), "message 10 through the returned right")
    returned.close()
    print("ok")


def main(argv):
    if len(argv) <= 1 or argv[1] == "hex":
        print_hex()
    elif argv[1] == "connect" and len(argv) == 3:
        roundtrip(argv[2])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
