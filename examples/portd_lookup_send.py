#!/usr/bin/env python3
"""Look a name up through portd and send it a message (name-server protocol 1.0).

Standard library only, no PortCore: the requests are those of
portd-protocol(7), NAME SERVER, spoken by portd_client.py beside this file
(the reference client of that section). The test suite runs it against
portd and a portctl service.

  portd_lookup_send.py [--socket PATH] [--wait SECONDS] [--request] NAME MSGID [TEXT...]

Connects to portd's control socket (--socket, else $PORTD_SOCKET, else
$XDG_RUNTIME_DIR/portd/portd.sock, else /run/user/$UID/portd/portd.sock), sends
HELLO and LOOKUP for NAME (waiting up to --wait seconds for it to appear),
and sends message MSGID with one data component per TEXT through the send
right portd passes back. With --request the message is a request
(REPLY_EXPECTED): the reply's data components are printed, one per line
(bytes that are not printable UTF-8 as \\xNN escapes).

Exit status, as portctl's: 0 done, 64 usage, 67 name not registered,
69 portd not running, 74 the port went away, 75 timed out, 76 unexpected
reply, 77 refused.
"""

import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import portd_client as pc  # noqa: E402  (beside this file)


class Exit(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def look_up(path, name, wait_seconds):
    """A send right to NAME's port, from LOOKUP (pipelined behind HELLO)."""
    try:
        client = pc.Client(path, timeout=5)
    except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
        raise Exit(69, "portd is not running at %s" % path)
    except PermissionError:
        raise Exit(77, "permission denied connecting to portd at %s" % path)
    with client:
        try:
            return client.lookup(name, int(wait_seconds * 1000)).port
        except pc.PortdError as e:
            if e.error == "not-found":
                raise Exit(67, "%s is not registered" % name)
            if e.error == "timeout":
                raise Exit(75, "%s was not registered within %s s" % (name, wait_seconds))
            if e.error in ("denied", "limit"):
                raise Exit(77, "refused by portd: %s" % e.message)
            raise Exit(76, "unexpected reply to LOOKUP: %s: %s" % (e.error, e.message))
        except TimeoutError:
            raise Exit(75, "portd did not answer")
        except (pc.WireError, pc.ConnectionClosed) as e:
            raise Exit(76, "unexpected reply to LOOKUP: %s" % e)
    # Closing the control connection leaves the send right valid.


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
    right = look_up(pc.control_socket_path(path), name, wait_seconds)
    right.settimeout(30)
    flags = pc.FLAG_REPLY_EXPECTED if is_request else 0
    try:
        pc.send_record(right, pc.encode(msgid, [t.encode() for t in args[2:]], flags))
    except (BrokenPipeError, ConnectionResetError):
        raise Exit(74, "the port of %s went away" % name)
    if is_request:
        try:
            reply = pc.receive_record(right)
        except socket.timeout:
            raise Exit(75, "no reply from %s" % name)
        except pc.WireError as e:
            raise Exit(76, "malformed reply: %s" % e)
        if reply is None:
            raise Exit(74, "the connection closed")
        for kind, value in reply.components:
            print(printable(value) if kind == "data" else "<port>")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exit as e:
        sys.stderr.write("portd_lookup_send.py: %s\n" % e)
        sys.exit(e.status)
