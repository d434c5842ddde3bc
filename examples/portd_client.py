#!/usr/bin/env python3
"""portd_client: a reference client of portd's name-server protocol 1.0.

Written from portd-protocol(7) alone (the record format of its DESCRIPTION,
the requests, replies, events and errors of its NAME SERVER section), in
Python 3 with the standard library only, so that it can be read as a worked
example of the page. The test suite runs its self-check against a real portd.

As a module:

    import portd_client as pc
    with pc.Client() as c:                       # connects, sends HELLO
        reg = c.register("org.example.echo")     # reg.listening: accept() on it
        right = c.lookup("org.example.echo").port   # send() to the port
        pending = c.submit_lookup("org.example.other", wait_ms=5000)
        print(c.status().names)                  # answered before the lookup
        found = pending.result()                 # raises pc.PortdError(timeout)

Every request has a blocking method (status, register, release, lookup,
watch, list, list_all, owner, owner_all, checkin) and a submit_* method that
sends it and returns a Pending at once: requests pipeline on the connection
and each reply is matched to its request by serial (Pending.result() reads
replies until its own arrives, keeping the others for their Pendings).
Events arrive on an EventPort (one end of a socketpair whose other end went
to portd as the request's reply port): EventPort.receive() returns a
NameOwnerChanged, NameAcquired, NameLost or WatchOverflow. An ERROR reply is
raised as PortdError (its error word, message and serial). A Client is meant
for one thread at a time.

As a command:

    portd_client.py [--socket PATH] status
    portd_client.py [--socket PATH] list
    portd_client.py [--socket PATH] owner NAME
    portd_client.py [--socket PATH] lookup NAME [--wait-ms N]
    portd_client.py [--socket PATH] register NAME [OPTION...]  (holds it until interrupted)
    portd_client.py [--socket PATH] watch [NAME]               (prints events until interrupted)
    portd_client.py [--socket PATH] checkin NAME
    portd_client.py [--socket PATH] --check [--declared NAME] [--strict]

The control socket is --socket, else $PORTD_SOCKET, else
$XDG_RUNTIME_DIR/portd/portd.sock, else /run/user/$UID/portd/portd.sock.
--check runs every request, pipelining, event and provokable error of the
page against that portd, one line per check and a summary; it exits 1 when a
check fails (with --strict also when one had to be skipped: CHECKIN of a
declared port needs --declared NAME, a port portd.conf(5) declares with
CheckInUser= this user; OWNER paging needs ClientsPerUID= above owner_page+2).
Exit status otherwise: 0 done, 1 portd answered an error, 64 usage,
69 portd not running.
"""

import dataclasses
import fcntl
import mmap
import os
import socket
import stat
import struct
import sys
import time

# --- The record format (portd-protocol(7), DESCRIPTION) --------------------

MAGIC = b"port"
WIRE_VERSION = 1
FLAG_REPLY_PORT = 0x01       # descriptor 0 is a send right to the sender's port
FLAG_REPLY_EXPECTED = 0x02   # a request: exactly one reply on this connection
KIND_DATA, KIND_PORT, KIND_LARGE = 1, 2, 3
HEADER = struct.Struct("<4sBBHI")   # magic, version, flags, n, msgid
ENTRY = struct.Struct("<B3xI")      # kind, three zero bytes, length
MAX_RECORD = 196608                 # PortCore's default maximum record size
RECEIVE_BUFFER = 262144             # larger than any record, so MSG_TRUNC means too long
MAX_COMPONENTS = 1024
MAX_DESCRIPTORS = 253
REQUIRED_SEALS = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW

# --- The name-server protocol (portd-protocol(7), NAME SERVER) -------------

PROTOCOL = "1.0"
STATUS, REGISTER, RELEASE, LOOKUP, WATCH, LIST, OWNER, CHECKIN, HELLO = range(0xFFFF0001, 0xFFFF000A)
REPLY, ERROR = 0xFFFF0200, 0xFFFF0201
NAME_OWNER_CHANGED, NAME_ACQUIRED, NAME_LOST, WATCH_OVERFLOW = range(0xFFFF0100, 0xFFFF0104)
REQUEST_NAMES = {STATUS: "STATUS", REGISTER: "REGISTER", RELEASE: "RELEASE", LOOKUP: "LOOKUP", WATCH: "WATCH",
                 LIST: "LIST", OWNER: "OWNER", CHECKIN: "CHECKIN", HELLO: "HELLO"}
MAX_SERIAL = 0xFFFFFFFF


class WireError(Exception):
    """A record that is not a valid port message (VALIDATION)."""


class ConnectionClosed(Exception):
    """portd closed the connection (after unsupported-version, or when it went away)."""


class PortdError(Exception):
    """An ERROR reply: `error` is the word (bad-request, not-found, ...),
    `message` the text for people, `serial` the request's (0: a request
    without a serial, or the refusal of the connection), `fields` all of
    them (a dict of lists: 'owner' for already-owned, 'protocol' for
    unsupported-version)."""

    def __init__(self, error, message, serial, fields=None):
        super().__init__("%s: %s (serial %d)" % (error, message, serial))
        self.error, self.message, self.serial = error, message, serial
        self.fields = fields or {}

    @property
    def owner(self):
        values = self.fields.get("owner")
        return Owner.parse(values[0]) if values else None


@dataclasses.dataclass
class Message:
    """A decoded record: `fields` are the data components split at the first
    '=' (in order, repeats kept); `ports` the descriptors of port components;
    `datas` the bytes of every data and large-data component; `components`
    all of them in order."""
    msgid: int
    flags: int
    fields: list
    ports: list
    reply_port: object = None
    datas: list = dataclasses.field(default_factory=list)
    components: list = dataclasses.field(default_factory=list)  # ("data", bytes) | ("port", fd), in order

    def get(self, key, default=None):
        for k, v in self.fields:
            if k == key:
                return v
        return default

    def all(self, key):
        return [v for k, v in self.fields if k == key]

    def number(self, key, default=None):
        value = self.get(key)
        return default if value is None else int(value)

    @property
    def serial(self):
        return self.number("serial", 0)

    def close_descriptors(self):
        for fd in self.ports + ([self.reply_port] if self.reply_port is not None else []):
            os.close(fd)
        self.ports, self.reply_port = [], None


def encode(msgid, components, flags=0):
    """A record of `components`: bytes (data) or the string "port". Returns
    the record; the caller sends the descriptors (reply port first, then one
    per port component) beside it."""
    table, data = b"", b""
    for c in components:
        if c == "port":
            table += ENTRY.pack(KIND_PORT, 0)
        else:
            table += ENTRY.pack(KIND_DATA, len(c))
            data += c
    return HEADER.pack(MAGIC, WIRE_VERSION, flags, len(components), msgid) + table + data


def encode_fields(msgid, fields, flags=0):
    """A record whose data components are 'key=value' fields, in order."""
    return encode(msgid, [("%s=%s" % (k, v)).encode() for k, v in fields], flags)


def decode(record, fds):
    """Validates `record` as VALIDATION orders it and decodes it. `fds` are
    the descriptors that came with it; on failure they are all closed."""
    try:
        return _decode(record, fds)
    except WireError:
        for fd in fds:
            os.close(fd)
        raise


def _decode(record, fds):
    if len(record) > MAX_RECORD:
        raise WireError("recordTooLarge")
    if len(record) < HEADER.size:
        raise WireError("truncated")
    magic, version, flags, n, msgid = HEADER.unpack_from(record)
    if magic != MAGIC:
        raise WireError("badMagic")
    if version != WIRE_VERSION:
        raise WireError("unsupportedVersion")
    if flags & ~(FLAG_REPLY_PORT | FLAG_REPLY_EXPECTED):
        raise WireError("unknownFlags")
    if n > MAX_COMPONENTS:
        raise WireError("tooManyComponents")
    if len(record) < HEADER.size + ENTRY.size * n:
        raise WireError("truncated")
    entries = []
    for i in range(n):
        at = HEADER.size + ENTRY.size * i
        if record[at + 1:at + 4] != b"\0\0\0":
            raise WireError("reservedBytesSet")
        kind, length = ENTRY.unpack_from(record, at)
        if kind not in (KIND_DATA, KIND_PORT, KIND_LARGE):
            raise WireError("unknownComponentKind")
        if (kind == KIND_PORT and length != 0) or (kind == KIND_LARGE and length == 0):
            raise WireError("invalidComponentLength")
        entries.append((kind, length))
    wanted = (1 if flags & FLAG_REPLY_PORT else 0) + sum(1 for k, _ in entries if k != KIND_DATA)
    if wanted > MAX_DESCRIPTORS:
        raise WireError("tooManyDescriptors")
    if wanted != len(fds):
        raise WireError("descriptorCountMismatch")
    end = HEADER.size + ENTRY.size * n + sum(length for k, length in entries if k == KIND_DATA)
    if len(record) < end:
        raise WireError("truncated")
    if len(record) > end:
        raise WireError("trailingBytes")
    fd_at = 0
    reply_port = None
    if flags & FLAG_REPLY_PORT:
        reply_port, fd_at = fds[0], 1
    at = HEADER.size + ENTRY.size * n
    datas, ports, components, memory_files = [], [], [], []
    for kind, length in entries:
        if kind == KIND_PORT:
            ports.append(fds[fd_at])
            components.append(("port", fds[fd_at]))
            fd_at += 1
            continue
        if kind == KIND_DATA:
            datas.append(bytes(record[at:at + length]))
            at += length
        else:
            datas.append(_read_large(fds[fd_at], length))
            memory_files.append(fds[fd_at])
            fd_at += 1
        components.append(("data", datas[-1]))
    for fd in memory_files:
        os.close(fd)  # copied into bytes: the memory file is no longer needed
    fields = []
    for d in datas:
        key, eq, value = d.decode("utf-8", "replace").partition("=")
        fields.append((key, value) if eq else ("", d.decode("utf-8", "replace")))
    return Message(msgid, flags, fields, ports, reply_port, datas, components)


def _read_large(fd, length):
    """A large-data component: a sealed memory file of at least `length`
    bytes (the seals checked first: an unsealed file could change or shrink),
    with no hole in those bytes."""
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except OSError:
        raise WireError("a large component's descriptor is not a memory file") from None
    if seals & REQUIRED_SEALS != REQUIRED_SEALS or os.fstat(fd).st_size < length:
        raise WireError("a large component's memory file is not sealed or too short")
    if length > 0 and os.lseek(fd, 0, os.SEEK_HOLE) < length:
        # Reading a hole would allocate memory charged to us.
        raise WireError("a large component's memory file has a hole in its announced range")
    with mmap.mmap(fd, length, prot=mmap.PROT_READ, flags=mmap.MAP_SHARED) as m:
        return bytes(m)


def send_record(sock, record, fds=()):
    """One record, one sendmsg(2): descriptors as SCM_RIGHTS, MSG_NOSIGNAL."""
    if fds:
        sock.sendmsg([record], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("%di" % len(fds), *fds))],
                     socket.MSG_NOSIGNAL)
    else:
        sock.sendmsg([record], [], socket.MSG_NOSIGNAL)


def receive_record(sock):
    """One record from `sock` (decoded), or None at the end of the connection."""
    data, fds, flags, _ = socket.recv_fds(sock, RECEIVE_BUFFER, MAX_DESCRIPTORS, socket.MSG_CMSG_CLOEXEC)
    if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
        for fd in fds:
            os.close(fd)
        raise WireError("recordTooLarge" if flags & socket.MSG_TRUNC else "descriptors lost (MSG_CTRUNC)")
    if not data and not fds:
        return None
    return decode(data, fds)


def control_socket_path(explicit=None):
    """--socket, else $PORTD_SOCKET, else $XDG_RUNTIME_DIR/portd/portd.sock,
    else /run/user/$UID/portd/portd.sock (the runtime directory pam_systemd
    makes; portctl also checks that it is private)."""
    if explicit:
        return explicit
    if os.environ.get("PORTD_SOCKET"):
        return os.environ["PORTD_SOCKET"]
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/"):
        return runtime.rstrip("/") + "/portd/portd.sock"
    return "/run/user/%d/portd/portd.sock" % os.getuid()


# --- Values of replies and events ------------------------------------------

@dataclasses.dataclass(frozen=True)
class Owner:
    """An owner, 'pid:uid:client' everywhere. client 0 is portd itself (a
    declared port)."""
    pid: int
    uid: int
    client: int

    @classmethod
    def parse(cls, text):
        pid, uid, client = (int(x) for x in text.split(":"))
        return cls(pid, uid, client)

    def __str__(self):
        return "%d:%d:%d" % (self.pid, self.uid, self.client)


def _owner(value):
    return Owner.parse(value) if value is not None else None


@dataclasses.dataclass
class Hello:
    protocol: str
    version: str
    client: int
    limits: dict    # max_record_bytes, max_request_bytes, ..., list_page, owner_page
    features: list  # pipelining, waiting-lookup, watch, checkin

    @classmethod
    def parse(cls, m):
        skip = ("serial", "protocol", "version", "client", "feature")
        limits = {k: int(v) for k, v in m.fields if k not in skip and v.isdigit()}
        return cls(m.get("protocol"), m.get("version"), m.number("client"), limits, m.all("feature"))


@dataclasses.dataclass
class Status:
    version: str
    protocol: str
    pid: int
    uptime_ms: int
    names: int
    clients: int
    lookups: int
    refusals: int
    declared: int

    @classmethod
    def parse(cls, m):
        return cls(m.get("version"), m.get("protocol"), *(m.number(k) for k in (
            "pid", "uptime_ms", "names", "clients", "lookups", "refusals", "declared")))


@dataclasses.dataclass
class Registration:
    """result 'registered' (listening: the receive right, a socket to accept
    on) or 'queued' (place: 1 is next). events: the EventPort given as the
    reply port, where NAME_ACQUIRED and NAME_LOST arrive (None without)."""
    name: str
    result: str
    serial: int
    listening: object = None
    place: int = None
    events: object = None


@dataclasses.dataclass
class Found:
    """LOOKUP's answer: port is a send right (a connected socket, set blocking)."""
    name: str
    owner: Owner
    port: object


@dataclasses.dataclass
class Entry:
    """One name of LIST, or the head of OWNER's reply."""
    name: str
    owner: Owner
    since_ms: int
    queue_length: int
    declared: bool = False
    checked_in: int = None


def _entry(fields):
    d = dict(fields)
    return Entry(d.get("name"), _owner(d.get("owner")), int(d.get("since_ms", 0)), int(d.get("queue_length", 0)),
                 d.get("declared") == "1", int(d["checked_in"]) if "checked_in" in d else None)


@dataclasses.dataclass
class ListPage:
    more: bool
    entries: list

    @classmethod
    def parse(cls, m):
        entries, current = [], None
        for key, value in m.fields:
            if key == "name":          # an entry starts at its name= field
                current = []
                entries.append(current)
            if current is not None:
                current.append((key, value))
        return cls(m.get("more") == "1", [_entry(e) for e in entries])


@dataclasses.dataclass
class OwnerPage:
    entry: Entry
    more: bool
    queued: list  # Owners, next first

    @classmethod
    def parse(cls, m):
        head = [(k, v) for k, v in m.fields if k in ("name", "owner", "since_ms", "queue_length", "declared", "checked_in")]
        return cls(_entry(head), m.get("more") == "1", [Owner.parse(v) for v in m.all("queued")])


@dataclasses.dataclass
class NameOwnerChanged:
    serial: int
    name: str
    event: str  # registered, released, replaced
    old: Owner
    new: Owner


@dataclasses.dataclass
class NameAcquired:
    serial: int
    name: str
    listening: object  # the receive right, as with result=registered


@dataclasses.dataclass
class NameLost:
    serial: int
    name: str
    new: Owner


@dataclasses.dataclass
class WatchOverflow:
    serial: int
    missed: int


def parse_event(m):
    """An event record as a Python object (an unknown msgid: the Message itself)."""
    if m.msgid == NAME_OWNER_CHANGED:
        return NameOwnerChanged(m.serial, m.get("name"), m.get("event"), _owner(m.get("old")), _owner(m.get("new")))
    if m.msgid == NAME_ACQUIRED:
        return NameAcquired(m.serial, m.get("name"), _listening(m))
    if m.msgid == NAME_LOST:
        return NameLost(m.serial, m.get("name"), _owner(m.get("new")))
    if m.msgid == WATCH_OVERFLOW:
        return WatchOverflow(m.serial, m.number("missed"))
    return m


def _listening(m):
    """The one port component of a reply or event, as a blocking socket."""
    if len(m.ports) != 1:
        m.close_descriptors()
        raise WireError("expected one port component, got %d" % len(m.ports))
    s = socket.socket(fileno=m.ports[0])
    s.setblocking(True)  # portd hands out non-blocking sockets
    m.ports = []
    return s


class EventPort:
    """A port of the client's own for events: one end of a
    socketpair(AF_UNIX, SOCK_SEQPACKET); the other end, `far`, goes to portd
    as a request's REPLY_PORT and is closed after the send."""

    def __init__(self):
        self.sock, far = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.far = far

    def sent(self):
        self.far.close()
        self.far = None

    def fileno(self):
        return self.sock.fileno()

    def receive(self, timeout=None):
        """The next event (parse_event), None when portd closed its end, or
        raises TimeoutError."""
        self.sock.settimeout(timeout)
        try:
            m = receive_record(self.sock)
        except socket.timeout:
            raise TimeoutError("no event within %s s" % timeout) from None
        return None if m is None else parse_event(m)

    def close(self):
        if self.far is not None:
            self.far.close()
        self.sock.close()


# --- The connection ---------------------------------------------------------

class Pending:
    """A request sent and not yet answered. result() waits for its reply
    (reading others meanwhile) and returns it parsed, or raises PortdError."""

    def __init__(self, client, serial, msgid, parse):
        self.client, self.serial, self.msgid, self._parse = client, serial, msgid, parse
        self._reply, self._result = None, None

    def done(self):
        """Whether the reply is in (without reading)."""
        return self._reply is not None or self.serial in self.client._replies

    def reply(self, timeout=None):
        """The raw reply Message, REPLY or ERROR."""
        if self._reply is None:
            self._reply = self.client._wait_for(self.serial, timeout)
        return self._reply

    def result(self, timeout=None):
        if self._result is None:
            self._result = self._parsed(self.reply(timeout))
        return self._result

    def _parsed(self, m):
        if m.msgid == ERROR:
            m.close_descriptors()
            raise PortdError(m.get("error", ""), m.get("message", ""), m.serial,
                             {k: m.all(k) for k, _ in m.fields})
        if m.msgid != REPLY:
            m.close_descriptors()
            raise WireError("reply of msgid %#x to %s" % (m.msgid, REQUEST_NAMES.get(self.msgid)))
        return self._parse(m)


class Client:
    """One connection to portd: one client, whose names go when it closes.
    The constructor connects and sends HELLO without waiting for its answer
    (hello_pending); `hello` waits for it."""

    def __init__(self, path=None, timeout=10.0, protocols=(PROTOCOL,), hello=True):
        self.path = control_socket_path(path)
        self.timeout = timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.sock.connect(self.path)
        except BaseException:
            self.sock.close()
            raise
        self._serial = 0
        self._replies = {}       # serial -> Message read before its Pending asked
        self._refusal = None     # an ERROR with serial 0 that is not ours to match
        self._closed = False
        self.hello_pending = self.submit_hello(protocols) if hello else None

    # Serials: the client's own numbers, 1 to 4294967295.
    def next_serial(self):
        self._serial = self._serial % MAX_SERIAL + 1
        return self._serial

    def submit(self, msgid, fields=(), events=None, parse=lambda m: m, serial=None):
        """Sends a request: 'serial=' first, then `fields` ((key, value)
        pairs); `events` (an EventPort) goes as the REPLY_PORT."""
        serial = self.next_serial() if serial is None else serial
        flags = FLAG_REPLY_EXPECTED | (FLAG_REPLY_PORT if events is not None else 0)
        record = encode_fields(msgid, [("serial", serial)] + list(fields), flags)
        try:
            send_record(self.sock, record, [events.far.fileno()] if events is not None else [])
        except BrokenPipeError:
            self._raise_refusal()
            raise
        if events is not None:
            events.sent()
        return Pending(self, serial, msgid, parse)

    def _raise_refusal(self):
        """After EPIPE: portd closed the connection, and what it said last
        (the refusal of a connection beyond ClientsPerUID= or MaxClients=:
        an ERROR with serial 0) still waits on the socket. Raises it."""
        self.sock.settimeout(1.0)
        try:
            while True:
                try:
                    m = receive_record(self.sock)
                except ConnectionResetError:
                    continue  # reported once, before what is still queued
                if m is None:
                    break
                if m.msgid == ERROR and m.serial == 0:
                    raise PortdError(m.get("error", ""), m.get("message", ""), 0, {k: m.all(k) for k, _ in m.fields})
                self._replies[m.serial] = m
        except (OSError, WireError):
            pass

    def _wait_for(self, serial, timeout):
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while serial not in self._replies:
            if self._refusal is not None:
                raise self._refusal
            if self._closed:
                raise ConnectionClosed("portd closed the connection")
            self.sock.settimeout(max(0.0, deadline - time.monotonic()))
            try:
                m = receive_record(self.sock)
            except socket.timeout:
                raise TimeoutError("no reply to serial %d within %s s" % (serial, timeout)) from None
            except ConnectionResetError:
                # portd closed the connection with requests of ours unread
                # (after unsupported-version): the kernel reports ECONNRESET
                # once, before the records still queued for us (the ERROR);
                # they, then the end of the connection, come next.
                continue
            if m is None:
                self._closed = True
                continue
            if m.serial == 0 and m.msgid == ERROR and serial != 0:
                # Serial 0: a request without a serial, or the refusal of
                # the connection (error=limit) -- ours only if we asked for 0.
                self._refusal = PortdError(m.get("error", ""), m.get("message", ""), 0,
                                           {k: m.all(k) for k, _ in m.fields})
                continue
            self._replies[m.serial] = m
        return self._replies.pop(serial)

    # --- The requests: submit_* send, the plain ones also wait. -----------

    def submit_hello(self, protocols=(PROTOCOL,)):
        return self.submit(HELLO, [("protocol", p) for p in protocols], parse=Hello.parse)

    @property
    def hello(self):
        """HELLO's reply (waits for it the first time)."""
        if not hasattr(self, "_hello"):
            self._hello = self.hello_pending.result()
        return self._hello

    def submit_status(self):
        return self.submit(STATUS, parse=Status.parse)

    def status(self):
        return self.submit_status().result()

    def submit_register(self, name, options=(), reply_port=False):
        """reply_port: True for a new EventPort (needed to queue, and where
        NAME_ACQUIRED and NAME_LOST arrive), or an EventPort."""
        events = EventPort() if reply_port is True else (reply_port or None)
        fields = [("name", name)] + [("option", o) for o in options]
        try:
            pending = self.submit(REGISTER, fields, events)
        except BaseException:
            if events is not None and reply_port is True:
                events.close()
            raise

        def parse(m):
            result = m.get("result")
            if result == "registered":
                return Registration(m.get("name"), result, pending.serial, listening=_listening(m), events=events)
            return Registration(m.get("name"), result, pending.serial, place=m.number("place"), events=events)
        pending._parse = parse
        return pending

    def register(self, name, options=(), reply_port=False):
        return self.submit_register(name, options, reply_port).result()

    def submit_release(self, name):
        return self.submit(RELEASE, [("name", name)], parse=lambda m: m.get("name"))

    def release(self, name):
        return self.submit_release(name).result()

    def submit_lookup(self, name, wait_ms=None):
        fields = [("name", name)] + ([("wait_ms", int(wait_ms))] if wait_ms else [])
        return self.submit(LOOKUP, fields, parse=lambda m: Found(m.get("name"), _owner(m.get("owner")), _listening(m)))

    def lookup(self, name, wait_ms=None):
        """A send right to the port named `name`. A waiting lookup is given
        the time it waits plus the client's timeout."""
        timeout = self.timeout + (wait_ms or 0) / 1000.0
        return self.submit_lookup(name, wait_ms).result(timeout)

    def submit_watch(self, name=None, events=None):
        """Watches `name` (None: every name) on `events` (default: a new
        EventPort); the result is the EventPort, where NAME_OWNER_CHANGED
        and WATCH_OVERFLOW arrive with this request's serial."""
        events = events or EventPort()
        try:
            pending = self.submit(WATCH, [("name", name)] if name is not None else [], events)
        except BaseException:
            events.close()
            raise
        pending._parse = lambda m: events
        return pending

    def watch(self, name=None):
        return self.submit_watch(name).result()

    def submit_list(self, after=None):
        return self.submit(LIST, [("after", after)] if after is not None else [], parse=ListPage.parse)

    def list(self, after=None):
        """One page of LIST."""
        return self.submit_list(after).result()

    def list_all(self):
        """Every entry, asking for pages until more=0."""
        entries, after = [], None
        while True:
            page = self.list(after)
            entries += page.entries
            if not page.more:
                return entries
            # An empty page with more=1: portd looked at its share of names
            # this client may not see; the same after= goes on from there.
            if page.entries:
                after = page.entries[-1].name

    def submit_owner(self, name, start=None):
        fields = [("name", name)] + ([("from", start)] if start is not None else [])
        return self.submit(OWNER, fields, parse=OwnerPage.parse)

    def owner(self, name, start=None):
        """One page of OWNER, from place `start` of the queue."""
        return self.submit_owner(name, start).result()

    def owner_all(self, name):
        """OWNER with every page: (Entry, [queued Owners]); starts again when
        the owner changes between pages, as the page says."""
        while True:
            page = self.owner(name)
            queued = list(page.queued)
            while page.more:
                nxt = self.owner(name, len(queued))
                if (nxt.entry.owner, nxt.entry.since_ms) != (page.entry.owner, page.entry.since_ms):
                    break
                queued += nxt.queued
                page = nxt
            else:
                return page.entry, queued

    def submit_checkin(self, name):
        return self.submit(CHECKIN, [("name", name)], parse=_listening)

    def checkin(self, name):
        """The declared port's listening socket."""
        return self.submit_checkin(name).result()

    def close(self):
        for m in self._replies.values():
            m.close_descriptors()
        self._replies.clear()
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --- The self-check (--check) ----------------------------------------------

class Skip(Exception):
    """A check this portd's configuration does not allow."""


class CheckFailed(Exception):
    pass


def expect(condition, what):
    if not condition:
        raise CheckFailed(what)


def expect_error(word, call, *args, **kwargs):
    """Runs call(*args); it must raise PortdError `word`. Returns the error."""
    try:
        got = call(*args, **kwargs)
    except PortdError as e:
        expect(e.error == word, "expected error %s, got %s" % (word, e))
        return e
    raise CheckFailed("expected error %s, got a reply: %r" % (word, got))


class Check:
    """Every request, event and error of the page against a running portd."""

    def __init__(self, path, declared=None, strict=False, only=None, out=sys.stdout):
        self.path, self.declared, self.strict, self.only, self.out = path, declared, strict, only, out
        self.counts = {"ok": 0, "FAIL": 0, "skip": 0}
        self.prefix = "check.%d.%d" % (os.getpid(), int(time.time() * 1000) % 1000000)
        self.serial_names = 0

    def name(self, what):
        self.serial_names += 1
        return "%s.%s.%d" % (self.prefix, what, self.serial_names)

    def client(self, **kwargs):
        return Client(self.path, **kwargs)

    def run(self):
        checks = [m for m in dir(self) if m.startswith("check_") and (not self.only or self.only in m.replace("_", "-"))]
        checks.sort(key=lambda m: getattr(self, m).__code__.co_firstlineno)
        for method in checks:
            label = method[len("check_"):].replace("_", "-")
            try:
                detail = getattr(self, method)()
                self.report("ok", label, detail)
            except Skip as e:
                self.report("skip", label, str(e))
            except Exception as e:  # a check that fails says why and the next one runs
                self.report("FAIL", label, "%s: %s" % (type(e).__name__, e))
        c = self.counts
        print("%d checks: %d ok, %d failed, %d skipped" % (sum(c.values()), c["ok"], c["FAIL"], c["skip"]),
              file=self.out)
        return 1 if c["FAIL"] or (self.strict and c["skip"]) else 0

    def report(self, result, label, detail):
        self.counts[result] += 1
        print("%-4s %s%s" % (result, label, ": " + detail if detail else ""), file=self.out, flush=True)

    # HELLO -----------------------------------------------------------------

    def check_hello(self):
        with self.client() as c:
            h = c.hello
            expect(h.protocol == PROTOCOL, "protocol %r" % h.protocol)
            expect(h.client > 0, "client %r" % h.client)
            for limit in ("max_record_bytes", "max_request_bytes", "max_request_fields", "max_names",
                          "max_pending_lookups", "max_watches", "max_wait_ms", "list_page", "owner_page"):
                expect(limit in h.limits, "no %s in %s" % (limit, h.limits))
            for feature in ("pipelining", "waiting-lookup", "watch", "checkin"):
                expect(feature in h.features, "no feature %s" % feature)
            return "client %d, version %s, %s" % (h.client, h.version, " ".join(h.features))

    def check_hello_pipelined_with_first_request(self):
        with self.client() as c:
            status = c.submit_status()   # sent before HELLO's reply was read
            s = status.result()
            expect(c.hello_pending.done(), "STATUS answered before HELLO")
            expect(s.protocol == PROTOCOL, "STATUS protocol %r" % s.protocol)

    def check_hello_later_minor_version(self):
        with self.client(protocols=("1.7", "2.0")) as c:
            expect(c.hello.protocol == PROTOCOL, "agreed %r to 1.7" % c.hello.protocol)

    def check_error_hello_required(self):
        with self.client(hello=False) as c:
            e = expect_error("hello-required", c.status)
            expect(e.serial == c._serial, "serial %d" % e.serial)
            c.hello_pending = c.submit_hello()    # the connection stays
            expect(c.hello.protocol == PROTOCOL, "HELLO after hello-required")
            c.status()

    def check_error_unsupported_version(self):
        with self.client(protocols=("2.0",)) as c:
            try:
                later = c.submit_status()    # pipelined behind the HELLO portd refuses
            except BrokenPipeError:
                later = None                 # portd closed first: the ERROR still waits to be read
            e = expect_error("unsupported-version", lambda: c.hello)
            expect(e.fields.get("protocol") == [PROTOCOL], "protocol fields %r" % e.fields.get("protocol"))
            try:
                if later is not None:
                    later.result()
                    raise CheckFailed("STATUS answered after unsupported-version")
                c.submit_status().result()
                raise CheckFailed("the connection stayed open after unsupported-version")
            except (ConnectionClosed, BrokenPipeError):
                pass

    def check_error_bad_request_second_hello(self):
        with self.client() as c:
            c.hello
            expect_error("bad-request", c.submit_hello().result)
            c.status()  # the connection stays

    # STATUS ----------------------------------------------------------------

    def check_status(self):
        with self.client() as c:
            s = c.status()
            cred = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            pid = struct.unpack("3i", cred)[0]
            expect(s.pid == pid, "STATUS pid %d, SO_PEERCRED pid %d" % (s.pid, pid))
            expect(s.clients >= 1 and s.uptime_ms >= 0 and s.names >= 0, "%r" % s)
            return "portd %s pid %d, %d names, %d clients" % (s.version, s.pid, s.names, s.clients)

    # REGISTER, LOOKUP, RELEASE ---------------------------------------------

    def check_register_lookup_and_send(self):
        name = self.name("echo")
        with self.client() as owner, self.client() as other:
            reg = owner.register(name)
            expect(reg.result == "registered" and reg.name == name, "%r" % reg)
            found = other.lookup(name)
            expect(found.name == name, "name %r" % found.name)
            expect(found.owner == Owner(os.getpid(), os.getuid(), owner.hello.client),
                   "owner %s, hello client %d" % (found.owner, owner.hello.client))
            send_record(found.port, encode(42, [b"hi"]))
            conn, _ = reg.listening.accept()
            m = receive_record(conn)
            expect(m.msgid == 42 and m.datas == [b"hi"], "got %r" % m)
            for s in (conn, found.port, reg.listening):
                s.close()

    def check_register_then_lookup_in_order(self):
        name = self.name("order")
        with self.client() as c:
            r = c.submit_register(name)
            l = c.submit_lookup(name)     # handled after the REGISTER
            found = l.result()
            r.result().listening.close()
            found.port.close()

    def check_release(self):
        name = self.name("release")
        with self.client() as c:
            c.register(name).listening.close()
            expect(c.release(name) == name, "RELEASE reply name")
            expect_error("not-found", c.lookup, name)

    def check_connection_close_releases(self):
        name = self.name("close")
        with self.client() as c, self.client() as w:
            watcher = w.watch(name)
            c.register(name).listening.close()
            c.close()
            events = [watcher.receive(5), watcher.receive(5)]
            expect([e.event for e in events] == ["registered", "released"], "%r" % events)
            expect_error("not-found", w.lookup, name)
            watcher.close()

    def check_register_options_and_queue(self):
        name = self.name("queue")
        with self.client() as a, self.client() as b, self.client() as q:
            first = a.register(name)
            e = expect_error("already-owned", b.register, name)                       # no reply port
            expect(e.owner == Owner(os.getpid(), os.getuid(), a.hello.client), "owner %s" % e.owner)
            expect_error("already-owned", b.register, name, ["do-not-queue"], True)    # may not queue
            queued = b.register(name, reply_port=True)
            expect(queued.result == "queued" and queued.place == 1, "%r" % queued)
            second = q.register(name, reply_port=True)
            expect(second.result == "queued" and second.place == 2, "%r" % second)
            again = b.register(name, reply_port=True)                                  # keeps its place
            expect(again.result == "queued" and again.place == 1, "again %r" % again)
            expect(again.events.receive(5) is None, "portd kept the second reply port")  # and closes it
            again.events.close()
            first.listening.close()
            queued.events.close()
            second.events.close()

    def check_event_name_acquired(self):
        name = self.name("acquired")
        with self.client() as a, self.client() as b:
            first = a.register(name)
            queued = b.register(name, reply_port=True)
            expect(queued.result == "queued", "%r" % queued)
            a.release(name)
            event = queued.events.receive(5)
            expect(isinstance(event, NameAcquired), "got %r" % event)
            expect(event.serial == queued.serial and event.name == name, "%r" % event)
            found = a.lookup(name)
            expect(found.owner.client == b.hello.client, "owner %s" % found.owner)
            send_record(found.port, encode(7, []))
            conn, _ = event.listening.accept()   # the acquired receive right works
            expect(receive_record(conn).msgid == 7, "message through the acquired name")
            for s in (conn, found.port, event.listening, first.listening):
                s.close()
            queued.events.close()

    def check_event_name_acquired_passes_over_a_gone_port(self):
        name = self.name("passes")
        with self.client() as a, self.client() as b, self.client() as c:
            first = a.register(name)
            gone = b.register(name, reply_port=True)
            nxt = c.register(name, reply_port=True)
            expect((gone.place, nxt.place) == (1, 2), "places %r %r" % (gone.place, nxt.place))
            gone.events.close()         # NAME_ACQUIRED cannot be delivered to b
            a.release(name)
            event = nxt.events.receive(5)
            expect(isinstance(event, NameAcquired) and event.serial == nxt.serial, "got %r" % event)
            found = a.lookup(name)
            expect(found.owner.client == c.hello.client, "owner %s" % found.owner)
            for s in (found.port, event.listening, first.listening, nxt.events):
                s.close()

    def check_event_name_lost(self):
        name = self.name("lost")
        with self.client() as a, self.client() as b:
            first = a.register(name, ["allow-replacement"], reply_port=True)
            expect(first.result == "registered", "%r" % first)
            second = b.register(name, ["replace-existing"])
            expect(second.result == "registered", "replace-existing: %r" % second)
            event = first.events.receive(5)
            expect(isinstance(event, NameLost), "got %r" % event)
            expect(event.serial == first.serial and event.name == name, "%r" % event)
            expect(event.new == Owner(os.getpid(), os.getuid(), b.hello.client), "new %s" % event.new)
            for s in (first.listening, second.listening, first.events):
                s.close()

    def check_event_name_owner_changed(self):
        name = self.name("changed")
        with self.client() as w, self.client() as a, self.client() as b:
            watcher = w.submit_watch(name)
            everything = w.submit_watch()
            watch_serial = watcher.serial
            port, all_port = watcher.result(), everything.result()
            ra = a.register(name, ["allow-replacement"])
            rb = b.register(name, ["replace-existing"])
            b.release(name)
            got = [port.receive(5) for _ in range(3)]
            me = (os.getpid(), os.getuid())
            oa, ob = Owner(*me, a.hello.client), Owner(*me, b.hello.client)
            want = [NameOwnerChanged(watch_serial, name, "registered", None, oa),
                    NameOwnerChanged(watch_serial, name, "replaced", oa, ob),
                    NameOwnerChanged(watch_serial, name, "released", ob, None)]
            expect(got == want, "got %r" % got)
            seen = []
            while len(seen) < 3:   # the watch of every name sees the same three
                e = all_port.receive(5)
                if e.name == name:
                    seen.append(e)
            expect([e.event for e in seen] == ["registered", "replaced", "released"], "all: %r" % seen)
            expect(all(e.serial == everything.serial for e in seen), "serials of the watch of every name")
            for s in (port, all_port, ra.listening, rb.listening):
                s.close()

    def check_event_watch_overflow(self):
        name = self.name("overflow")
        with self.client() as w, self.client() as a:
            watcher = w.watch(name)    # and then not read while changes pile up
            # 1,200 changes; about 280 fit in the watcher's socket buffer
            # and portd's queue with Linux's default buffer sizes.
            rounds = 600
            for i in range(0, rounds, 100):
                pend = []
                for _ in range(100):
                    pend.append(a.submit_register(name))
                    pend.append(a.submit_release(name))
                for p in pend:
                    r = p.result()
                    if isinstance(r, Registration):
                        r.listening.close()
            changes, overflow = 0, None
            while True:
                e = watcher.receive(5)
                if e is None:
                    break
                if isinstance(e, WatchOverflow):
                    overflow = e
                    continue
                expect(overflow is None, "a change after WATCH_OVERFLOW: %r" % e)
                changes += 1
            expect(overflow is not None, "no WATCH_OVERFLOW after %d changes (then portd closed the port)" % changes)
            expect(overflow.missed > 0 and changes + overflow.missed == 2 * rounds,
                   "%d delivered + %d missed != %d" % (changes, overflow.missed, 2 * rounds))
            watcher.close()
            return "%d changes delivered, %d missed" % (changes, overflow.missed)

    # Pipelining --------------------------------------------------------------

    def check_pipelining_matched_by_serial(self):
        waited, other = self.name("waited"), self.name("pipelined")
        with self.client() as c, self.client() as registrar:
            n = c.hello.limits["list_page"] + 2
            many = [c.submit_register(self.name("many")) for _ in range(n)]
            lookup = c.submit_lookup(waited, wait_ms=20000)
            status = c.submit_status()
            reg = c.submit_register(other)
            page1 = c.submit_list()
            owner = c.submit_owner(other)
            order = []
            # Read in arrival order: everything after the waiting LOOKUP
            # comes first, and the LOOKUP only once the name is registered.
            for p in many + [status, reg, page1, owner]:
                p.reply()
                order.append(p.serial)
            expect(not lookup.done(), "the waiting LOOKUP was answered before its name existed")
            s = status.result()
            expect(isinstance(s, Status), "STATUS %r" % s)
            r = reg.result()
            expect(r.name == other and r.result == "registered", "REGISTER %r" % r)
            p1 = page1.result()
            expect(p1.more and len(p1.entries) == c.hello.limits["list_page"],
                   "LIST page 1: more=%r, %d entries" % (p1.more, len(p1.entries)))
            page2 = c.submit_list(p1.entries[-1].name)
            o = owner.result()
            expect(o.entry.name == other and o.entry.owner.client == c.hello.client, "OWNER %r" % o)
            held = registrar.register(waited)
            found = lookup.result(10)
            expect(found.name == waited and found.owner.client == registrar.hello.client, "LOOKUP %r" % found)
            p2 = page2.result()
            expect(p2.entries and p2.entries[0].name > p1.entries[-1].name, "LIST page 2 after page 1")
            for p in many:
                p.result().listening.close()
            for s in (r.listening, held.listening, found.port):
                s.close()
            return "%d requests in flight, waiting LOOKUP answered last" % (len(many) + 5)

    # LIST, OWNER ---------------------------------------------------------------

    def check_list_paging(self):
        with self.client() as c:
            page_size = c.hello.limits["list_page"]
            names = sorted(self.name("list") for _ in range(page_size + 10))
            regs = [c.submit_register(n) for n in names]
            for r in regs:
                r.result().listening.close()
            pages, after, entries = 0, None, []
            while True:
                page = c.list(after)
                pages += 1
                expect(len(page.entries) <= page_size, "%d entries in a page" % len(page.entries))
                entries += page.entries
                if not page.more:
                    break
                if page.entries:
                    after = page.entries[-1].name
            listed = [e.name for e in entries]
            expect(listed == sorted(listed, key=lambda s: s.encode()), "not in byte order")
            expect(len(set(listed)) == len(listed), "a name listed twice")
            mine = [e for e in entries if e.name in set(names)]
            expect([e.name for e in mine] == names, "%d of %d names listed" % (len(mine), len(names)))
            me = Owner(os.getpid(), os.getuid(), c.hello.client)
            expect(all(e.owner == me and e.queue_length == 0 and e.since_ms > 0 for e in mine), "entry fields")
            return "%d names in %d pages" % (len(entries), pages)

    def check_owner(self):
        name = self.name("owner")
        with self.client() as a, self.client() as b:
            reg = a.register(name)
            q = b.register(name, reply_port=True)
            page = a.owner(name)
            expect(page.entry.name == name and page.entry.owner.client == a.hello.client, "%r" % page.entry)
            expect(page.entry.queue_length == 1 and not page.more, "%r" % page)
            expect(page.queued == [Owner(os.getpid(), os.getuid(), b.hello.client)], "queued %r" % page.queued)
            expect(abs(page.entry.since_ms - time.time() * 1000) < 600000, "since_ms %d" % page.entry.since_ms)
            expect_error("not-found", a.owner, self.name("nobody"))
            reg.listening.close()
            q.events.close()

    def check_owner_paging(self):
        name = self.name("owner-pages")
        with self.client() as a:
            page_size = a.hello.limits["owner_page"]
            reg = a.register(name)
            clients_before = a.status().clients
            clients, queued = [], []
            try:
                for i in range(page_size + 1):
                    try:
                        c = self.client()
                        clients.append(c)
                        queued.append(c.register(name, reply_port=True))
                    except (PortdError, ConnectionClosed, OSError) as e:
                        raise Skip("queueing client %d of %d: %s (ClientsPerUID= too low?)" % (i + 1, page_size + 1, e))
                first = a.owner(name)
                expect(first.more and len(first.queued) == page_size, "page 1: more=%r, %d" % (first.more, len(first.queued)))
                entry, all_queued = a.owner_all(name)
                want = [Owner(os.getpid(), os.getuid(), c.hello.client) for c in clients]
                expect(all_queued == want, "%d queued, %d expected, in order" % (len(all_queued), len(want)))
                expect(entry.queue_length == len(want), "queue_length %d" % entry.queue_length)
                return "%d queued clients in 2 pages" % len(want)
            finally:
                for r in queued:
                    r.events.close()
                for c in clients:
                    c.close()
                reg.listening.close()
                # portd counts a connection until it has seen it close: wait
                # for that, so the next check is not refused for ClientsPerUID=.
                deadline = time.monotonic() + 10
                while a.status().clients > clients_before and time.monotonic() < deadline:
                    time.sleep(0.01)

    # CHECKIN -------------------------------------------------------------------

    def check_error_not_declared(self):
        with self.client() as c:
            expect_error("not-declared", c.checkin, self.name("undeclared"))

    def check_checkin(self):
        if not self.declared:
            raise Skip("no --declared NAME")
        with self.client() as c, self.client() as other:
            right = other.lookup(self.declared)   # a declared port is looked up like any name
            expect(right.owner.client == 0, "declared port's owner %s" % right.owner)
            send_record(right.port, encode(9, [b"queued before check-in"]))
            listening = c.checkin(self.declared)
            conn, _ = listening.accept()
            m = receive_record(conn)
            expect(m.msgid == 9, "message %r" % m)
            entry = [e for e in c.list_all() if e.name == self.declared]
            expect(entry and entry[0].declared and entry[0].checked_in == os.getpid(), "LIST %r" % entry)
            expect_error("not-owner", c.release, self.declared)
            expect_error("denied", c.register, self.declared)
            for s in (conn, listening, right.port):
                s.close()

    # Errors ----------------------------------------------------------------------

    def check_error_bad_request(self):
        with self.client() as c:
            c.hello
            expect_error("bad-request", c.submit(STATUS, [("colour", "blue")]).result)       # unknown field
            expect_error("bad-request", c.submit(LOOKUP, []).result)                        # missing field
            expect_error("bad-request", c.submit(RELEASE, [("name", "a"), ("name", "b")]).result)  # twice
            expect_error("bad-request", c.submit_register(self.name("x"), ["no-such-option"]).result)
            expect_error("bad-request", c.submit(LOOKUP, [("name", "a"), ("wait_ms", "soon")]).result)
            expect_error("bad-request", c.submit(0xFFFF00FF, []).result)                     # unknown msgid
            expect_error("bad-request", c.submit(WATCH, [("name", "a")]).result)             # no reply port
            expect_error("bad-request", c.submit(STATUS, [("x%d" % i, "") for i in range(16)]).result)  # 17 fields
            # a request without serial= first is answered with serial 0
            send_record(c.sock, encode_fields(STATUS, [("name", "a"), ("serial", "99")], FLAG_REPLY_EXPECTED))
            e = expect_error("bad-request", Pending(c, 0, STATUS, None).result)
            expect(e.serial == 0, "serial %d" % e.serial)
            # a reply port that is not the client's own: a right from LOOKUP
            name = self.name("notown")
            reg = c.register(name)
            right = c.lookup(name).port
            events = EventPort()
            events.far.close()
            events.far = right
            expect_error("bad-request", c.submit(WATCH, [("name", name)], events).result)
            events.close()
            reg.listening.close()
            c.status()  # the connection stays
            return "9 malformed requests"

    def check_error_invalid_name(self):
        with self.client() as c:
            for bad in ("", ".dot", "a b", "a/b", "x" * 201, "é"):
                expect_error("invalid-name", c.lookup, bad)
            c.register("x" * 200).listening.close()   # 200 bytes is a name
            c.release("x" * 200)

    def check_error_not_found(self):
        with self.client() as c:
            e = expect_error("not-found", c.lookup, self.name("missing"))
            expect(e.message, "no message")

    def check_error_timeout(self):
        with self.client() as c:
            start = time.monotonic()
            expect_error("timeout", c.lookup, self.name("never"), 200)
            expect(time.monotonic() - start >= 0.2, "answered before 200 ms")

    def check_error_not_owner(self):
        name = self.name("notowner")
        with self.client() as a, self.client() as b:
            expect_error("not-owner", b.release, name)     # nobody owns it
            reg = a.register(name)
            expect_error("not-owner", b.release, name)     # someone else does
            reg.listening.close()

    def check_error_already_owned_by_itself(self):
        name = self.name("self")
        with self.client() as a:
            reg = a.register(name)
            e = expect_error("already-owned", a.register, name)
            expect(e.owner.client == a.hello.client, "owner %s" % e.owner)
            reg.listening.close()

    def check_error_limit(self):
        with self.client() as c:
            big = "x" * c.hello.limits["max_request_bytes"]
            expect_error("limit", c.submit(LOOKUP, [("name", big)]).result)
            n = c.hello.limits["max_pending_lookups"]
            waiting = [c.submit_lookup(self.name("pending"), wait_ms=60000) for _ in range(n)]
            e = expect_error("limit", c.submit_lookup(self.name("pending"), wait_ms=60000).result)
        with self.client() as c:
            n_watches = c.hello.limits["max_watches"]
            watches = [c.submit_watch(self.name("w")) for _ in range(n_watches)]
            for w in watches:
                w.result().close()
            expect_error("limit", c.watch, self.name("w"))
            n_names = c.hello.limits["max_names"]
            regs = [c.submit_register(self.name("n")) for _ in range(n_names)]
            for r in regs:
                r.result().listening.close()
            expect_error("limit", c.register, self.name("n"))
            c.status()
        return "request bytes, %d lookups waiting, %d watches, %d names" % (n, n_watches, n_names)

    def check_stale_listener_is_released_on_lookup(self):
        name = self.name("stale")
        with self.client() as a, self.client() as b:
            watcher = b.watch(name)
            a.register(name).listening.close()    # the owner stops listening, its connection stays
            expect(any(e.name == name for e in b.list_all()), "LIST before the lookup")
            expect_error("not-found", b.lookup, name)
            expect(not any(e.name == name for e in b.list_all()), "LIST after the lookup still has it")
            events = [watcher.receive(5).event, watcher.receive(5).event]
            expect(events == ["registered", "released"], "%r" % events)
            watcher.close()


# --- The command line -------------------------------------------------------

def _print_entry(e):
    extra = (" declared" if e.declared else "") + (" checked_in=%d" % e.checked_in if e.checked_in else "")
    print("%s owner=%s since_ms=%d queue_length=%d%s" % (e.name, e.owner, e.since_ms, e.queue_length, extra))


def main(argv):
    args = list(argv[1:])
    path, check, declared, strict, only = None, False, None, False, None
    rest = []
    while args:
        a = args.pop(0)
        if a == "--socket" and args:
            path = args.pop(0)
        elif a == "--check":
            check = True
        elif a == "--declared" and args:
            declared = args.pop(0)
        elif a == "--strict":
            strict = True
        elif a == "--only" and args:
            only = args.pop(0)
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            rest.append(a)
    path = control_socket_path(path)
    try:
        if check:
            if rest:
                raise SystemExit(64)
            return Check(path, declared, strict, only).run()
        if not rest:
            sys.stderr.write(__doc__)
            return 64
        verb, rest = rest[0], rest[1:]
        with Client(path) as c:
            if verb == "status" and not rest:
                for k, v in dataclasses.asdict(c.status()).items():
                    print("%s=%s" % (k, v))
            elif verb == "list" and not rest:
                for e in c.list_all():
                    _print_entry(e)
            elif verb == "owner" and len(rest) == 1:
                entry, queued = c.owner_all(rest[0])
                _print_entry(entry)
                for q in queued:
                    print("queued=%s" % q)
            elif verb == "lookup" and rest:
                wait = int(rest[2]) if rest[1:2] == ["--wait-ms"] and len(rest) == 3 else None
                found = c.lookup(rest[0], wait)
                print("%s owner=%s" % (found.name, found.owner))
                found.port.close()
            elif verb == "register" and rest:
                reg = c.register(rest[0], rest[1:], reply_port=True)
                print("%s %s%s" % (reg.name, reg.result, " place=%d" % reg.place if reg.place else ""), flush=True)
                while True:
                    event = reg.events.receive()
                    if event is None:
                        return 0
                    print(event, flush=True)
            elif verb == "watch" and len(rest) <= 1:
                events = c.watch(rest[0] if rest else None)
                while True:
                    event = events.receive()
                    if event is None:
                        return 0
                    print(event, flush=True)
            elif verb == "checkin" and len(rest) == 1:
                c.checkin(rest[0]).close()
                print("checked in for %s" % rest[0])
            else:
                sys.stderr.write(__doc__)
                return 64
        return 0
    except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
        sys.stderr.write("portd_client.py: portd is not running at %s\n" % path)
        return 69
    except PortdError as e:
        sys.stderr.write("portd_client.py: %s\n" % e)
        return 1
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
