// Output: portctl's standard output. Every line goes out with one write(2)
// as soon as it is complete (no stdio buffering), so a stream (watch,
// listen) piped into another program is seen event by event. A reader that
// went away (EPIPE; SIGPIPE is ignored in main) ends the verb quietly with
// status 1, instead of a crash or an error message nobody reads.

import PortCore

enum Output {
    /// Writes `text` and a newline to standard output.
    static func line(_ text: String) throws(Failure) {
        try bytes(Array((text + "\n").utf8))
    }

    /// Writes `bytes` to standard output as they are (for --raw).
    static func bytes(_ bytes: [UInt8]) throws(Failure) {
        let written: Bool
        do {
            written = try StandardStream.output.withDescriptor { (out) throws(SystemCallError) in
                try Descriptor.writeAll(out, bytes)
            }
        } catch {
            throw Failure(.failure, "cannot write to standard output: \(error)")
        }
        if !written { throw Failure.silent(.failure) }
    }

    /// Writes the bytes of a buffer to standard output as they are.
    static func bytes(_ buffer: UnsafeRawBufferPointer) throws(Failure) {
        let written: Bool
        do {
            written = try StandardStream.output.withDescriptor { (out) throws(SystemCallError) in
                try Descriptor.writeAll(out, buffer)
            }
        } catch {
            throw Failure(.failure, "cannot write to standard output: \(error)")
        }
        if !written { throw Failure.silent(.failure) }
    }
}
