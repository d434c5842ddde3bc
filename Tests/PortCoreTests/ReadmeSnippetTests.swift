// The README's Swift snippets, compiled here verbatim (each between the
// BEGIN/END README markers of a function below, indented, imports left out:
// this file imports what they do) and checked to be the README's text, so
// the two cannot drift; the snippet that needs no running portd is run too,
// and what it printed by the time it returned is checked, as a program made
// of it would show it before exiting.

import Foundation
import PortCore
import Synchronization
import Testing

/// The README's snippets, in the README's order.
enum ReadmeSnippets {
    /// What the snippets print: their `print` is this one (a member shadows
    /// the global function), so that nothing reaches the test process's
    /// standard output, which other tests capture.
    static let printed = Mutex<[String]>([])

    static func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
        let line = items.map { "\($0)" }.joined(separator: separator)
        printed.withLock { $0.append(line) }
    }

    /// The name-server snippet (needs a running portd: compiled, not run).
    static func nameServer() throws {
        // BEGIN README
        let names = try PortNameServer.shared                 // [NSMessagePortNameServer sharedInstance]: the per-user portd, or $PORTD_SOCKET
        let echo = PCPort { m in PCPortMessage(msgid: m.msgid, components: m.components) }
        try PCRunLoop.current.add(echo, forMode: .default)   // the loop keeps the port (addPort:forMode:)
        try names.register(echo, name: "org.example.echo")   // registerPort:name:, until removed, the port invalidated, or exit
        let right = try names.port(forName: "org.example.echo")   // portForName:; the right is yours as long as you keep it
        let watch = try names.watch("org.example.echo") { change in print(change.event, change.newOwner as Any) }
        // END README
        _ = (right, watch)
    }

    /// The port, send right and request snippet.
    static func portAndRequest() throws {
        // BEGIN README
        let loop = PCRunLoop.current
        let port = PCPort { message in                      // an anonymous port (NSMachPort)
            print(message.msgid, message.components.first?.string ?? "", message.sender!)
            return PCPortMessage(msgid: message.msgid, strings: ["pong"])  // the reply, for requests
        }
        try port.schedule(in: loop, forMode: .default)
        let right = try port.makeSendRight()                 // a send right: an AF_UNIX SOCK_SEQPACKET socket
        try right.send(PCPortMessage(msgid: 1, strings: ["hello"]), timeout: .seconds(1))
        loop.runInMode(.default, timeout: .seconds(1), returnAfterSourceHandled: true)

        // CFMessagePortSendRequest: the reply is awaited in a private run-loop mode
        // (or the one `replyMode:` names), here from another thread than the
        // port's, as it would be across processes; the port's loop serves it
        // until that thread, done, stops it (CFRunLoopStop).
        Thread.detachNewThread {
            if case .reply(let answer)? = try? right.request(PCPortMessage(msgid: 2), receiveTimeout: .seconds(1)) {
                print(answer.components.first?.string ?? "")   // "pong"
            }
            loop.stop()
        }
        loop.runInMode(.default, timeout: .seconds(10))      // returns .stopped once "pong" is printed
        // END README
    }

    /// The calls the README names, spelled out (needs a running portd:
    /// compiled, not run).
    static func spelledOut() throws {
        // BEGIN README
        // The check-in handshake (Apple's listings 3-17 to 3-19), both halves.
        let loop = PCRunLoop.current
        let server = PCPort()
        try server.schedule(in: loop, forMode: .default)
        let checkIns = CheckInServer(loop: loop, onCheckIn: { worker in
            print("checked in:", worker.name ?? "", worker.credentials as Any)   // worker.port: a right to the worker's port
        })
        checkIns.serve(server)                                 // the server's port hands check-ins to it
        let toServer = try server.makeSendRight()
        let worker = PCPort { _ in nil }
        try worker.schedule(in: loop, forMode: .default)
        _ = try toServer.checkIn(workerPort: worker, name: "w1")
        try toServer.onInvalidation(in: loop, forMode: .default) { print("the server's port is gone") }
        loop.runInMode(.default, before: MonotonicInstant.now() + .seconds(1), returnAfterSourceHandled: true)

        // Messages as an AsyncSequence, served by the background loop.
        let inbox = PCPort()
        let messages = try inbox.messages()
        Task { for await message in messages { print(message.msgid) } }

        // A client of portd of your own, its loss, and reconnection.
        final class Reconnection: PortNameServerDelegate {          // called on the loop's thread
            var outcomes: [String: ReregistrationOutcome] = [:]
            func nameServerDidLoseConnection(_ server: PortNameServer) { outcomes = [:] }   // the names are gone meanwhile
            func nameServer(_ server: PortNameServer, didReconnectWith names: [String: ReregistrationOutcome]) { outcomes = names }
        }
        let names = try PortNameServer()
        try names.onConnectionLoss(in: loop, forMode: .default) { print("portd went away: the names are gone") }
        let delegate = Reconnection()                          // held weakly by the client: keep it
        try names.reconnectAutomatically(in: loop, delegate: delegate)
        // END README
    }
}

@Suite struct ReadmeSnippetTests {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The ```swift blocks of README.md, without their import lines, but
    /// the package manifests (see `theManifestSnippetNamesThisPackagesLibrary`).
    private static func readmeBlocks() throws -> [String] {
        try allReadmeBlocks().filter { !$0.hasPrefix("// swift-tools-version") }
    }

    /// The ```swift blocks of README.md, without their import lines.
    private static func allReadmeBlocks() throws -> [String] {
        let text = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        var blocks: [String] = []
        var current: [String]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```swift" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else if current != nil, !line.hasPrefix("import ") {
                current!.append(String(line))
            }
        }
        return blocks.map { $0.trimmingCharacters(in: .newlines) }
    }

    /// The text between the markers of this file, de-indented.
    private static func compiledBlocks() throws -> [String] {
        let text = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        var blocks: [String] = []
        var current: [String]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed == "// BEGIN README" {
                current = []
            } else if trimmed == "// END README" {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else if current != nil {
                current!.append(line.hasPrefix("        ") ? String(line.dropFirst(8)) : String(line))
            }
        }
        return blocks.map { $0.trimmingCharacters(in: .newlines) }
    }

    @Test func theCompiledSnippetsAreTheReadmes() throws {
        let readme = try Self.readmeBlocks()
        let compiled = try Self.compiledBlocks()
        #expect(readme.count == compiled.count)
        for (r, c) in zip(readme, compiled) { #expect(r == c) }
    }

    /// The manifest of a package that uses PortCore: a manifest cannot be
    /// compiled here, so this checks what went wrong for users: the
    /// product is this package's library, and the `package:` it is taken
    /// from is the identity of the dependency, the last component of its
    /// path, not the manifest's `name:`.
    @Test func theManifestSnippetNamesThisPackagesLibrary() throws {
        let manifests = try Self.allReadmeBlocks().filter { $0.hasPrefix("// swift-tools-version") }
        #expect(manifests.count == 1)
        let ownManifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        for manifest in manifests {
            let path = try #require(manifest.firstMatch(of: /\.package\(path: "([^"]+)"\)/)?.1)
            let product = try #require(manifest.firstMatch(of: /\.product\(name: "([^"]+)", package: "([^"]+)"\)/))
            #expect(product.2 == path.split(separator: "/").last!)
            #expect(ownManifest.contains(".library(name: \"\(product.1)\""))
            #expect(manifest.hasPrefix(ownManifest.prefix { $0 != "\n" }))  // the same tools version
        }
    }

    @Test func thePortSnippetRuns() throws {
        // On a thread of its own: the snippet leaves its port in that
        // thread's loop, which must not be a shared executor thread's.
        ReadmeSnippets.printed.withLock { $0 = [] }
        let done = DispatchSemaphore(value: 0)
        let run = SnippetRun()
        let thread = Thread {
            do { try ReadmeSnippets.portAndRequest() } catch { run.set(error) }
            // What the snippet printed by the time it returned: a program
            // made of it exits here, and what a thread of it prints later
            // is lost.
            let printed = ReadmeSnippets.printed.withLock { $0 }
            run.setPrinted(printed)
            done.signal()
        }
        thread.start()
        #expect(done.wait(timeout: .now() + 20) == .success)
        #expect(run.get() == nil)
        // The port's handler printed the message and the request, and the
        // thread that made the request printed the reply, all before the
        // snippet's last run returned.
        let printed = run.printed()
        let pid = "pid=\(getpid()) uid=\(getuid()) gid=\(getgid())"
        #expect(printed == ["1 hello \(pid)", "2  \(pid)", "pong"])
    }
}

/// How a run of a snippet on another thread ended: the error it threw, and
/// what it had printed when it returned.
final class SnippetRun: @unchecked Sendable {
    // Safe to share: `error` and `lines` are accessed with `lock` held.
    private let lock = NSLock()
    private var error: (any Error)?
    private var lines: [String] = []
    func set(_ e: any Error) { lock.withLock { error = e } }
    func get() -> (any Error)? { lock.withLock { error } }
    func setPrinted(_ l: [String]) { lock.withLock { lines = l } }
    func printed() -> [String] { lock.withLock { lines } }
}
