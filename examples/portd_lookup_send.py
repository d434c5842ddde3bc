#!/usr/bin/env python3
"""Look a name up through portd and send it a message, from portd-protocol(7) alone.

Standard library only, no PortCore: the record format is the page's
DESCRIPTION, the requests its NAME SERVER section. The test suite runs it
against portd and a portctl service.

  portd_lookup_send.py [--socket PATH] [--wait SECONDS] [--request] NAME MSGID [TEXT...]

Connects to portd's control socket (--socket, else $PORTD_SOCKET, else
$XDG_RUNTIME_DIR/portd/portd.sock, else /tmp/portd-$UID/portd.sock), sends
LOOKUP for NAME (waiting up to --wait seconds for it to appear), and sends
message MSGID with one data component per TEXT through the send right portd
passes back. With --request the message is a request (REPLY_EXPECTED): the
reply's data components are printed, one per line (bytes that are not
printable UTF-8 as \\xNN escapes).

Exit status, as portctl's: 0 done, 64 usage, 67 name not registered,
69 portd not running, 74 the port went away, 75 timed out, 76 unexpected
reply, 77 refused.
"""

import mmap
import os
import socket
import struct
import sys

MAGIC = b"port"
FLAG_REPLY_EXPECTED = 0x02
KIND_DATA, KIND_PORT, KIND_LARGE = 1, 2, 3
MAX_RECORD = 196608
MAX_FDS = 253
LOOKUP = 0xFFFF0004


class Exit(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def control_socket_path(explicit):
    if explicit:
        return explicit
    if os.environ.get("PORTD_SOCKET"):
        return os.environ["PORTD_SOCKET"]
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/"):
        return runtime.rstrip("/") + "/portd/portd.sock"
    return "/tmp/portd-%d/portd.sock" % os.getuid()


def encode(msgid, datas, flags=0):
    """A record of data components only (no descriptors)."""
    header = MAGIC + struct.pack("<BBHI", 1, flags, len(datas), msgid)
    table = b"".join(struct.pack("<B3xI", KIND_DATA, len(d)) for d in datas)
    return header + table + b"".join(datas)


def decode(record, fds):
    """(msgid, [("data", bytes) | ("port", fd)]), checked as VALIDATION says."""
    if len(record) < 12 or record[:4] != MAGIC:
        raise Exit(76, "not a port message")
    version, flags, n, msgid = struct.unpack_from("<BBHI", record, 4)
    if version != 1 or flags & ~0x03 or len(record) < 12 + 8 * n:
        raise Exit(76, "malformed reply")
    fd_index = 1 if flags & 0x01 else 0
    at = 12 + 8 * n
    components = []
    for i in range(n):
        kind, length = struct.unpack_from("<B3xI", record, 12 + 8 * i)
        if kind == KIND_DATA:
            components.append(("data", record[at:at + length]))
            at += length
        elif kind in (KIND_PORT, KIND_LARGE):
            if fd_index >= len(fds):
                raise Exit(76, "descriptor count mismatch")
            fd = fds[fd_index]
            fd_index += 1
            if kind == KIND_PORT:
                components.append(("port", fd))
            else:
                with mmap.mmap(fd, length, prot=mmap.PROT_READ) as m:
                    components.append(("data", bytes(m)))
                os.close(fd)
        else:
            raise Exit(76, "unknown component kind %d" % kind)
    if at != len(record) or fd_index != len(fds):
        raise Exit(76, "malformed reply")
    return msgid, components


def receive(sock):
    data, fds, flags, _ = socket.recv_fds(sock, MAX_RECORD, MAX_FDS)
    if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
        raise Exit(76, "truncated reply")
    if not data:
        raise Exit(74, "the connection closed")
    return decode(data, fds)


def words(components):
    return [c[1].decode() for c in components if c[0] == "data"]


def look_up(path, name, wait_seconds):
    control = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    control.settimeout(wait_seconds + 5)
    try:
        control.connect(path)
    except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
        raise Exit(69, "portd is not running at %s" % path)
    except PermissionError:
        raise Exit(77, "permission denied connecting to portd at %s" % path)
    request = [name.encode()]
    if wait_seconds > 0:
        request.append(b"wait_ms=%d" % int(wait_seconds * 1000))
    control.send(encode(LOOKUP, request, FLAG_REPLY_EXPECTED))
    try:
        msgid, components = receive(control)
    except socket.timeout:
        raise Exit(75, "portd did not answer")
    control.close()  # the send right we got stays valid without it
    reply = words(components)
    word = reply[0] if reply else ""
    if word == "found":
        ports = [c[1] for c in components if c[0] == "port"]
        if len(ports) != 1:
            raise Exit(76, "found without a port")
        return socket.socket(fileno=ports[0])
    message = next((w[8:] for w in reply if w.startswith("message=")), word)
    if word == "not-found":
        raise Exit(67, "%s is not registered" % name)
    if word == "timeout":
        raise Exit(75, "%s was not registered within %s s" % (name, wait_seconds))
    if word == "denied":
        raise Exit(77, "denied by portd: %s" % message)
    raise Exit(76, "unexpected reply to LOOKUP: %s" % message)


def printable(data):
    out = []
    for ch in data.decode("utf-8", "surrogateescape"):
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out.append("\\x%02x" % (code - 0xDC00))
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            out.append("\\x%02x" % code)
        else:
            out.append(ch)
    return "".join(out)


def main(argv):
    args = argv[1:]
    path, wait_seconds, is_request = None, 0.0, False
    while args and args[0].startswith("--"):
        option = args.pop(0)
        if option == "--socket" and args:
            path = args.pop(0)
        elif option == "--wait" and args:
            wait_seconds = float(args.pop(0))
        elif option == "--request":
            is_request = True
        else:
            raise Exit(64, __doc__)
    if len(args) < 2:
        raise Exit(64, __doc__)
    name, msgid = args[0], int(args[1], 0)
    right = look_up(control_socket_path(path), name, wait_seconds)
    right.settimeout(30)
    record = encode(msgid, [t.encode() for t in args[2:]], FLAG_REPLY_EXPECTED if is_request else 0)
    try:
        right.send(record)
    except (BrokenPipeError, ConnectionResetError):
        raise Exit(74, "the port of %s went away" % name)
    if is_request:
        try:
            _, components = receive(right)
        except socket.timeout:
            raise Exit(75, "no reply from %s" % name)
        for kind, value in components:
            print(printable(value) if kind == "data" else "<port>")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exit as e:
        sys.stderr.write("portd_lookup_send.py: %s\n" % e)
        sys.exit(e.status)
