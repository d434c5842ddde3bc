#!/usr/bin/env python3
"""Call an exported portd name from plain NATS, as portd-bridge(8) "NATS
MAPPING" says any client can: a request to PREFIX.NAME whose payload is a
portd record (portd-protocol(7), version 1, no descriptors).

  port_call.py URL SUBJECT MSGID TEXT [--one-way] [--raw HEX] [--timeout S]

Prints one line: "reply MSGID TEXT" (the reply record's msgid and first
component as text), "ack" (a one-way record was delivered), "error CODE
TEXT" (the Portd-Error header), "no-responders" or "timeout". --raw sends
the given bytes (hex) as the payload instead of a record. Exit 0 for a reply
or an ack, 1 for an error, 2 for a timeout, 3 for no responders.
"""
import argparse
import asyncio
import struct
import sys

import nats
from nats.errors import NoRespondersError, TimeoutError


def record(msgid, components, request):
    flags = 0x02 if request else 0
    header = b"port" + struct.pack("<BBHI", 1, flags, len(components), msgid)
    table = b"".join(struct.pack("<II", 1, len(c)) for c in components)
    return header + table + b"".join(components)


def first_component(data):
    count = struct.unpack_from("<H", data, 6)[0]
    msgid = struct.unpack_from("<I", data, 8)[0]
    if count == 0:
        return msgid, ""
    kind, length = struct.unpack_from("<II", data, 12)
    start = 12 + 8 * count
    return msgid, data[start:start + length].decode("utf-8", "replace")


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("subject")
    p.add_argument("msgid", type=int)
    p.add_argument("text")
    p.add_argument("--one-way", action="store_true")
    p.add_argument("--raw")
    p.add_argument("--timeout", type=float, default=5)
    a = p.parse_args()
    nc = await nats.connect(a.url, connect_timeout=5, max_reconnect_attempts=0)
    payload = bytes.fromhex(a.raw) if a.raw is not None else record(a.msgid, [a.text.encode()], not a.one_way)
    try:
        m = await nc.request(a.subject, payload, timeout=a.timeout)
    except NoRespondersError:
        print("no-responders")
        return 3
    except TimeoutError:
        print("timeout")
        return 2
    finally:
        pass
    headers = m.headers or {}
    await nc.close()
    if "Portd-Error" in headers:
        print("error " + headers["Portd-Error"])
        return 1
    if not m.data:
        print("ack")
        return 0
    msgid, text = first_component(m.data)
    print("reply %d %s" % (msgid, text))
    return 0


sys.exit(asyncio.run(main()))
