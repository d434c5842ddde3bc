#!/usr/bin/env python3
"""A NATS peer for the tests, through nats-py (run with the project's venv:
scripts/ensure-venv; Tests/PortTestSupport/PythonVenv.swift).

  nats_peer.py respond URL SUBJECT [--queue GROUP] [--prefix TEXT]
        subscribe to SUBJECT (in queue GROUP if given) and answer every
        request with TEXT followed by the request's payload (default prefix
        "echo:"); print "ready" on stdout once the server has the
        subscription (after a flush), then one line "served N" per request;
        run until killed.
  nats_peer.py request URL SUBJECT PAYLOAD [--timeout SECONDS] [--attempts N] [--for SECONDS]
                      [--until-ok SECONDS]
        send requests one after another and print one line per attempt on
        stdout: "reply MS PAYLOAD", "timeout MS" or "no-responders MS" (MS:
        how long it took); exit 0 when the last attempt got a reply, 2 when
        it timed out, 3 when the server said no responders (503), 4 when the
        connection failed. --attempts: make N attempts whatever they give
        (default 1). --for: go on making attempts until SECONDS have gone
        by since the first, one per --timeout at most (a "no responders"
        comes at once, and the attempts must not flood the servers).
        --until-ok: after a failure try again until a reply
        comes or SECONDS have gone by (an interest that has not travelled
        between servers yet answers no responders at once).
  nats_peer.py kv-put URL BUCKET KEY VALUE
        create the key-value bucket BUCKET when it is not there, put
        KEY=VALUE, print the new revision.
  nats_peer.py kv-watch URL BUCKET COUNT
        watch every key of BUCKET (it must exist): one line "put KEY VALUE"
        or "del KEY" per entry, first those already there, then "watching"
        (the watch is set up), then one per change; exit 0 after COUNT
        entries.

Every connection tries for 5 s at most, without reconnecting.
"""
import argparse
import asyncio
import sys
import time

import nats
from nats.errors import NoRespondersError, TimeoutError as NatsTimeout


async def connect(url):
    return await nats.connect(url, connect_timeout=5, allow_reconnect=False, max_reconnect_attempts=0)


async def respond(args):
    nc = await connect(args.url)
    served = 0

    async def handler(msg):
        nonlocal served
        await msg.respond(args.prefix.encode() + msg.data)
        served += 1
        print(f"served {served}", flush=True)

    await nc.subscribe(args.subject, queue=args.queue or "", cb=handler)
    await nc.flush()
    print("ready", flush=True)
    await asyncio.Event().wait()  # until killed


async def request(args):
    try:
        nc = await connect(args.url)
    except Exception as error:  # the server is not there
        print(f"connect: {error!r}", file=sys.stderr)
        return 4
    first = time.monotonic()
    deadline = first + (args.until_ok or 0)
    attempt = 0
    while True:
        attempt += 1
        started = time.monotonic()
        try:
            reply = await nc.request(args.subject, args.payload.encode(), timeout=args.timeout)
            status, outcome = 0, "reply"
        except NatsTimeout:
            status, outcome = 2, "timeout"
        except NoRespondersError:
            status, outcome = 3, "no-responders"
        line = f"{outcome} {(time.monotonic() - started) * 1000:.0f}"
        if status == 0:
            line += " " + reply.data.decode(errors="replace")
        print(line, flush=True)
        if attempt < args.attempts:
            continue
        if args.for_seconds is not None and time.monotonic() < first + args.for_seconds:
            await asyncio.sleep(max(0, started + args.timeout - time.monotonic()))  # pacing
            continue
        if status == 0 or args.until_ok is None or time.monotonic() >= deadline:
            break
    await nc.close()
    return status


async def kv_put(args):
    nc = await connect(args.url)
    js = nc.jetstream()
    try:
        kv = await js.key_value(args.bucket)
    except nats.js.errors.BucketNotFoundError:
        kv = await js.create_key_value(bucket=args.bucket)
    revision = await kv.put(args.key, args.value.encode())
    print(revision, flush=True)
    await nc.close()
    return 0


async def kv_watch(args):
    nc = await connect(args.url)
    kv = await nc.jetstream().key_value(args.bucket)
    watcher = await kv.watchall()
    seen = 0
    # The watcher yields None once the entries already there are delivered.
    async for entry in watcher:
        if entry is None:
            print("watching", flush=True)
            continue
        if entry.operation in ("DEL", "PURGE"):
            print(f"del {entry.key}", flush=True)
        else:
            print(f"put {entry.key} {entry.value.decode(errors='replace')}", flush=True)
        seen += 1
        if seen >= args.count:
            break
    await watcher.stop()
    await nc.close()
    return 0


def main():
    parser = argparse.ArgumentParser(prog="nats_peer.py")
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("respond")
    p.add_argument("url")
    p.add_argument("subject")
    p.add_argument("--queue")
    p.add_argument("--prefix", default="echo:")
    p.set_defaults(run=respond)
    p = commands.add_parser("request")
    p.add_argument("url")
    p.add_argument("subject")
    p.add_argument("payload")
    p.add_argument("--timeout", type=float, default=1.0)
    p.add_argument("--attempts", type=int, default=1)
    p.add_argument("--for", dest="for_seconds", type=float)
    p.add_argument("--until-ok", type=float)
    p.set_defaults(run=request)
    p = commands.add_parser("kv-put")
    p.add_argument("url")
    p.add_argument("bucket")
    p.add_argument("key")
    p.add_argument("value")
    p.set_defaults(run=kv_put)
    p = commands.add_parser("kv-watch")
    p.add_argument("url")
    p.add_argument("bucket")
    p.add_argument("count", type=int)
    p.set_defaults(run=kv_watch)
    args = parser.parse_args()
    sys.exit(asyncio.run(args.run(args)))


if __name__ == "__main__":
    main()
