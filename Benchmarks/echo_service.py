#!/usr/bin/env python3
"""Echo service for scripts/bench: run under `portctl register NAME -- python3 echo_service.py`.

Descriptor 3 is the name's listening socket (LISTEN_FDS=1). Every request
(REPLY_EXPECTED, header byte 5 bit 0x02, portd-protocol(7)) gets an empty
reply with the same msgid on the same connection; other messages are
dropped. Runs until killed. Small on purpose: the benchmark times the
client (portctl), not this.
"""
import selectors
import socket
import struct

listener = socket.socket(fileno=3)
listener.setblocking(False)
sel = selectors.DefaultSelector()
sel.register(listener, selectors.EVENT_READ)
while True:
    for key, _ in sel.select():
        s = key.fileobj
        if s is listener:
            try:
                conn, _ = listener.accept()
            except BlockingIOError:
                continue
            conn.setblocking(False)
            sel.register(conn, selectors.EVENT_READ)
            continue
        try:
            record, fds, _, _ = socket.recv_fds(s, 262144, 16)
        except BlockingIOError:
            continue
        for fd in fds:
            socket.close(fd)
        if not record:
            sel.unregister(s)
            s.close()
            continue
        if len(record) >= 12 and record[5] & 0x02:
            msgid = struct.unpack_from("<I", record, 8)[0]
            s.send(b"port" + struct.pack("<BBHI", 1, 0, 0, msgid))
