// MessageCommand: `--exec COMMAND`, run once per received message: a shell
// script becomes a service.
//
// Contract (portctl(1), "Running a command per message"):
//   - COMMAND runs as `/bin/sh -c COMMAND`, with portctl's environment plus
//     PORTCTL_NAME (the name served), PORTCTL_MSGID, PORTCTL_SENDER_PID,
//     PORTCTL_SENDER_UID, PORTCTL_SENDER_GID, PORTCTL_REPLY (1 when the
//     message has a reply port, else 0), PORTCTL_COMPONENTS (the count) and
//     PORTCTL_LENGTHS (each component's length in bytes, space-separated,
//     "port" for a port component);
//   - its standard input is the message's data components, concatenated in
//     order (PORTCTL_LENGTHS tells where each ends); ports are not on it;
//   - when the message has a reply port (a request, or a message sent
//     with a reply port), its standard output is captured
//     and sent back as the reply: one data component, with the request's
//     msgid; otherwise its standard output is portctl's.
//
// Standard input is fed while standard output is drained (poll on both),
// so neither side can block the other whatever the sizes; a command that
// exits without reading all of its input is fine (EPIPE ends the feeding).

import PortCore

struct MessageCommand {
    let command: String
    /// The name being served (or the server checked in to).
    let name: String

    /// The environment additions for `message`, in a fixed order.
    static func variables(for message: PCPortMessage, name: String) -> [String] {
        let lengths = message.components.map { c -> String in
            switch c {
            case .data(let b): String(b.count)
            case .sharedMemory(let m): String(m.count)
            case .port: "port"
            }
        }
        return [
            "PORTCTL_NAME=\(name)",
            "PORTCTL_MSGID=\(message.msgid)",
            "PORTCTL_SENDER_PID=\(message.sender.map { String($0.pid) } ?? "")",
            "PORTCTL_SENDER_UID=\(message.sender.map { String($0.uid) } ?? "")",
            "PORTCTL_SENDER_GID=\(message.sender.map { String($0.gid) } ?? "")",
            "PORTCTL_REPLY=\(message.replyPort != nil ? 1 : 0)",
            "PORTCTL_COMPONENTS=\(message.components.count)",
            "PORTCTL_LENGTHS=\(lengths.joined(separator: " "))",
        ]
    }

    /// The environment of the command: ours, without stale PORTCTL_* and
    /// LISTEN_* variables, plus `variables`.
    static func environment(base: [String], adding variables: [String]) -> [String] {
        base.filter { !$0.hasPrefix("PORTCTL_") && !$0.hasPrefix("LISTEN_") } + variables
    }

    /// Runs the command for `message`. With `captureOutput`, returns what it
    /// wrote on standard output; otherwise that goes to portctl's.
    func run(for message: PCPortMessage, captureOutput: Bool) throws(Failure) -> (output: [UInt8], termination: Spawn.Termination) {
        do {
            return try runChecked(message, captureOutput: captureOutput)
        } catch {
            throw Failure(.failure, "cannot run \(command): \(error)")
        }
    }

    private func runChecked(
        _ message: PCPortMessage, captureOutput: Bool
    ) throws(SystemCallError) -> (output: [UInt8], termination: Spawn.Termination) {
        let input = try Pipe.make()
        var inputWrite: Int32? = input.write
        var outputRead: Int32?
        var childOutput: Int32?
        defer {
            if let fd = inputWrite { Descriptor.close(fd) }
            if let fd = outputRead { Descriptor.close(fd) }
        }
        var descriptors: [Int32: Int32] = [0: input.read]
        if captureOutput {
            let output = try Pipe.make()
            outputRead = output.read
            childOutput = output.write
            descriptors[1] = output.write
        }
        let pid: Int32
        do {
            pid = try Spawn.start(
                ["/bin/sh", "-c", command],
                environment: Self.environment(
                    base: Spawn.currentEnvironment, adding: Self.variables(for: message, name: name)),
                descriptors: descriptors)
        } catch {
            Descriptor.close(input.read)
            if let fd = childOutput { Descriptor.close(fd) }
            throw error
        }
        // The child has its copies; ours must go so that EOF can be seen.
        Descriptor.close(input.read)
        if let fd = childOutput { Descriptor.close(fd) }

        let chunks = message.components.filter { if case .port = $0 { false } else { true } }
        var chunkIndex = 0
        var offset = 0
        var output: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 1)
        defer { buffer.deallocate() }
        try Descriptor.setNonBlocking(input.write, true)
        if let fd = outputRead { try Descriptor.setNonBlocking(fd, true) }

        func closeInput() {
            if let fd = inputWrite { Descriptor.close(fd) }
            inputWrite = nil
        }
        func skipEmpty() {
            while chunkIndex < chunks.count, length(chunks[chunkIndex]) == offset {
                chunkIndex += 1
                offset = 0
            }
            if chunkIndex == chunks.count { closeInput() }
        }
        skipEmpty()
        while inputWrite != nil || outputRead != nil {
            var entries: [(fd: Int32, events: Poll.Events)] = []
            if let fd = inputWrite { entries.append((fd, .writable)) }
            if let fd = outputRead { entries.append((fd, .readable)) }
            let ready = try Poll.wait(entries, timeout: nil)
            for (entry, events) in zip(entries, ready) where !events.isEmpty {
                if entry.fd == inputWrite {
                    let outcome = try withBytes(chunks[chunkIndex]) { (all) throws(SystemCallError) in
                        try Descriptor.write(entry.fd, UnsafeRawBufferPointer(rebasing: all[offset...]))
                    }
                    switch outcome {
                    case .bytes(let n):
                        offset += n
                        skipEmpty()
                    case .wouldBlock: break
                    case .brokenPipe: closeInput()  // the command stopped reading: fine
                    }
                } else {
                    switch try Descriptor.read(entry.fd, into: buffer) {
                    case .bytes(let n): output.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[..<n]))
                    case .endOfFile:
                        Descriptor.close(entry.fd)
                        outputRead = nil
                    case .wouldBlock: break
                    }
                }
            }
        }
        let termination = try Spawn.wait(pid)!
        return (output, termination)
    }

    private func length(_ c: PCPortMessage.Component) -> Int {
        switch c {
        case .data(let b): b.count
        case .sharedMemory(let m): m.count
        case .port: 0
        }
    }

    private func withBytes<R>(
        _ c: PCPortMessage.Component, _ body: (UnsafeRawBufferPointer) throws(SystemCallError) -> R
    ) throws(SystemCallError) -> R {
        switch c {
        case .data(let b):
            return try b.withUnsafeBytes { raw in Result { () throws(SystemCallError) in try body(raw) } }.get()
        case .sharedMemory(let m):
            return try m.withUnsafeBytes { raw in Result { () throws(SystemCallError) in try body(raw) } }.get()
        case .port:
            return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }
}
