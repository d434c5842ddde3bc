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
            "PORTCTL_ORIGIN=\(message.origin?.text ?? "")",
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
        // The read end of the input pipe (and the write end of the output
        // pipe) go to the child; ours are gone once it has them, so that
        // EOF can be seen.
        let input = try Pipe.make()
        var inputWrite: OwnedDescriptor? = input.write
        var outputRead: OwnedDescriptor? = nil
        var descriptors = Spawn.Descriptors(capacity: 2)
        try descriptors.insert(input.read, as: StandardStream.input.number)
        if captureOutput {
            let output = try Pipe.make()
            outputRead = .some(output.read)
            try descriptors.insert(output.write, as: StandardStream.output.number)
        }
        let pid = try Spawn.start(
            ["/bin/sh", "-c", command],
            environment: Self.environment(
                base: Spawn.currentEnvironment, adding: Self.variables(for: message, name: name)),
            descriptors: descriptors)

        let chunks = message.components.filter { if case .port = $0 { false } else { true } }
        var chunkIndex = 0
        var offset = 0
        var output: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 1)
        defer { buffer.deallocate() }
        switch inputWrite {
        case .some(let fd): try Descriptor.setNonBlocking(fd, true)
        case .none: break
        }
        switch outputRead {
        case .some(let fd): try Descriptor.setNonBlocking(fd, true)
        case .none: break
        }

        /// Moves past the chunks written whole; true when none is left.
        func skipEmpty() -> Bool {
            while chunkIndex < chunks.count, length(chunks[chunkIndex]) == offset {
                chunkIndex += 1
                offset = 0
            }
            return chunkIndex == chunks.count
        }
        if skipEmpty() { inputWrite = nil }
        while inputWrite != nil || outputRead != nil {
            var writable: Poll.Events = []
            var readable: Poll.Events = []
            switch inputWrite {
            case .some(let w):
                switch outputRead {
                case .some(let r): (writable, readable) = try Poll.wait(w, for: .writable, r, for: .readable, timeout: nil)
                case .none: writable = try Poll.wait(w, for: .writable, timeout: nil)
                }
            case .none:
                switch outputRead {
                case .some(let r): readable = try Poll.wait(r, for: .readable, timeout: nil)
                case .none: break
                }
            }
            if !writable.isEmpty {
                var outcome = Descriptor.WriteOutcome.wouldBlock
                switch inputWrite {
                case .some(let w):
                    outcome = try withBytes(chunks[chunkIndex]) { (all) throws(SystemCallError) in
                        try Descriptor.write(w, UnsafeRawBufferPointer(rebasing: all[offset...]))
                    }
                case .none: break
                }
                switch outcome {
                case .bytes(let n):
                    offset += n
                    if skipEmpty() { inputWrite = nil }  // all written: the command sees EOF
                case .wouldBlock: break
                case .brokenPipe: inputWrite = nil  // the command stopped reading: fine
                }
            }
            if !readable.isEmpty {
                var outcome = Descriptor.ReadOutcome.wouldBlock
                switch outputRead {
                case .some(let r): outcome = try Descriptor.read(r, into: buffer)
                case .none: break
                }
                switch outcome {
                case .bytes(let n): output.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[..<n]))
                case .endOfFile: outputRead = nil
                case .wouldBlock: break
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
