// NatsRegistry: the registry of exported names, a JetStream key-value
// bucket (one key per exporting bridge and name, "BRIDGE.NAME"), through
// libnats's KV API. Every call here blocks on a JetStream reply, and those
// replies arrive through the bridge's run loop (NatsConnection), so none of
// them runs on the loop's thread: puts and deletes go in order through one
// serial worker thread (`work`), and the watcher, whose kvWatcher_Next only
// blocks in libnats 3.4.1, has a thread of its own. What the watcher sees
// is handed to the loop with `perform`.
//
// Leases: nats-server 2.9 has no per-key TTL and an expired key makes no
// watch event, so liveness is the exporter's refresh (every LeaseTime/3)
// and the importer's clock: an entry not seen for LeaseTime is dead
// (Bridge). The bucket's own TTL (3 × LeaseTime) only purges what dead
// exporters left behind.

import CNats
import Dispatch
import Foundation
import Logging
import PortCore
import Synchronization

/// One change the watcher saw.
struct RegistryChange: Sendable {
    let key: String
    /// nil for a delete or purge.
    let value: String?
}

/// The value of an entry: who exports the name. JSON, readable by any
/// NATS tool (`nats kv get`).
struct RegistryEntry: Codable, Sendable, Equatable {
    let bridge: String
    let name: String
    let host: String
    let pid: Int32
    let uid: UInt32
    let since: UInt64

    var json: String { String(decoding: (try? JSONEncoder().encode(self)) ?? Data(), as: UTF8.self) }

    static func parse(_ text: String) -> RegistryEntry? {
        try? JSONDecoder().decode(RegistryEntry.self, from: Data(text.utf8))
    }

    /// The key of `name` exported by `bridge`.
    static func key(bridge: String, name: String) -> String { "\(bridge).\(name)" }
}

final class NatsRegistry: @unchecked Sendable {
    // Safe to share: `connection`, `bucket`, `ttl`, `loop`, `logger`,
    // `work` are immutable; `js` and `kv` are touched only on `work`'s
    // thread; `watching` only with `watchingLock` held.
    private let connection: NatsConnection
    private let bucket: String
    private let ttl: Duration
    private let loop: PCRunLoop
    private let logger: Logger
    private let work = DispatchQueue(label: "portd-bridge.registry")
    private var js: OpaquePointer?
    private var kv: OpaquePointer?
    private struct Watching {
        var watcher: OpaquePointer?
        var generation = 0
        var stopped = false
    }
    private let watchingLock = Lock()
    private var watching = Watching()
    private let onChange: @Sendable (RegistryChange) -> Void

    init(
        connection: NatsConnection, bucket: String, leaseTime: Duration, loop: PCRunLoop, logger: Logger,
        onChange: @escaping @Sendable (RegistryChange) -> Void
    ) {
        self.connection = connection
        self.bucket = bucket
        self.ttl = leaseTime * 3
        self.loop = loop
        self.logger = logger
        self.onChange = onChange
    }

    /// On `work`: the bucket, made on first use (any bridge may make it;
    /// the same configuration twice is no error for JetStream).
    private func store() -> OpaquePointer? {
        if let kv { return kv }
        guard connection.isConnected else { return nil }
        do throws(NatsError) {
            if js == nil {
                var ctx: OpaquePointer?
                try natsCheck("natsConnection_JetStream", natsConnection_JetStream(&ctx, connection.nc, nil))
                js = ctx
            }
            var store: OpaquePointer?
            let status = js_KeyValue(&store, js, bucket)
            if status == NATS_OK {
                kv = store
                return store
            }
            var cfg = kvConfig()
            try natsCheck("kvConfig_Init", kvConfig_Init(&cfg))
            let created = bucket.withCString { name in
                cfg.Bucket = name
                cfg.History = 1
                cfg.TTL = ttl.milliseconds * 1_000_000  // nanoseconds
                return js_CreateKeyValue(&store, js, &cfg)
            }
            try natsCheck("js_CreateKeyValue", created)
            kv = store
            return store
        } catch {
            logger.warning("the registry bucket \(bucket) is not reachable: \(error)")
            return nil
        }
    }

    /// Puts `entry` under its key, in order with every other change.
    func put(_ entry: RegistryEntry) {
        let key = RegistryEntry.key(bridge: entry.bridge, name: entry.name)
        let value = entry.json
        work.async { [self] in
            guard let kv = store() else { return }
            var revision: UInt64 = 0
            let status = kvStore_PutString(&revision, kv, key, value)
            if status != NATS_OK { logger.warning("registry: put \(key): \(NatsError("kvStore_PutString", status))") }
        }
    }

    /// Runs `body` on `work`'s thread once every change queued before it is done.
    func afterQueued(_ body: @escaping @Sendable () -> Void) { work.async(execute: body) }

    /// Deletes `key`, in order with every other change.
    func delete(_ key: String) {
        work.async { [self] in
            guard let kv = store() else { return }
            let status = kvStore_Delete(kv, key)
            if status != NATS_OK { logger.warning("registry: delete \(key): \(NatsError("kvStore_Delete", status))") }
        }
    }

    /// (Re)starts the watcher: a new watch replays every current entry,
    /// then follows the changes. Called at every (re)connect.
    func restartWatch() {
        work.async { [self] in
            guard let kv = store() else { return }
            var options = kvWatchOptions()
            _ = kvWatchOptions_Init(&options)
            var w: OpaquePointer?
            let status = kvStore_WatchAll(&w, kv, &options)
            guard status == NATS_OK, let w else {
                logger.warning("registry: cannot watch \(bucket): \(NatsError("kvStore_WatchAll", status))")
                return
            }
            // The old watcher is stopped under the lock its thread checks
            // before it destroys it, so it is never stopped once freed.
            let (generation, stopped) = watchingLock.withLock { () -> (Int, Bool) in
                if watching.stopped { return (watching.generation, true) }
                if let old = watching.watcher { _ = kvWatcher_Stop(old) }
                watching.watcher = w
                watching.generation += 1
                return (watching.generation, false)
            }
            if stopped {
                _ = kvWatcher_Stop(w)
                kvWatcher_Destroy(w)
                return
            }
            // The watcher is the thread's alone from here (it destroys it).
            nonisolated(unsafe) let watcher = w
            let thread = Thread { [self] in watch(watcher, generation: generation) }
            thread.name = "portd-bridge.watch"
            thread.start()
        }
    }

    /// The watcher's thread: hands each entry to the loop until stopped.
    private func watch(_ w: OpaquePointer, generation: Int) {
        defer { kvWatcher_Destroy(w) }
        func current() -> Bool { watchingLock.withLock { watching.generation == generation && !watching.stopped } }
        while current() {
            var entry: OpaquePointer?
            let status = kvWatcher_Next(&entry, w, 1000)
            if status == NATS_TIMEOUT { continue }
            guard status == NATS_OK else {
                // Disconnected, or stopped: the loop's check says which;
                // a pause keeps a lasting failure from spinning.
                if current() { Thread.sleep(forTimeInterval: 0.1) }
                continue
            }
            guard let entry else { continue }  // the end of the initial values
            let key = kvEntry_Key(entry).map { String(cString: $0) } ?? ""
            let op = kvEntry_Operation(entry)
            let value = op == kvOp_Put ? kvEntry_ValueString(entry).map { String(cString: $0) } : nil
            kvEntry_Destroy(entry)
            let change = RegistryChange(key: key, value: value)
            loop.perform { [onChange] in onChange(change) }
        }
    }

    /// Stops the watcher for good, on `work`'s thread: kvWatcher_Stop may
    /// wait for JetStream, whose answer comes through the loop.
    func stop() {
        work.async { [self] in stopNow() }
    }

    private func stopNow() {
        watchingLock.withLock {
            if let w = watching.watcher { _ = kvWatcher_Stop(w) }
            watching.stopped = true
            watching.watcher = nil
        }
    }
}
