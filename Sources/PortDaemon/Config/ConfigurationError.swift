// ConfigurationError: why portd.conf (or one of its drop-ins) cannot be
// used, naming the file and, where there is one, the line, the way a
// compiler does: "/etc/portd/portd.conf:12: unknown key 'Foo' in [Limits]".
//
// Invariants: every error names the file it comes from (as the path it was
// read by); `line` is 1-based and nil only for errors about the whole file
// (unreadable, too large, not UTF-8) or the drop-in directory. A
// configuration with any error is not used at all: portd starts with none
// of it, and a reload keeps the previous one. `InvalidValue` is the same
// complaint about one value before its location is known: the code that
// reads a value throws it, and the code that knows the file and line turns
// it into a ConfigurationError.

package struct ConfigurationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file (or drop-in directory) the error is in.
    package let file: String
    /// The 1-based line, or nil for the file as a whole.
    package let line: Int?
    /// What is wrong, without the location.
    package let message: String

    package init(file: String, line: Int?, _ message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    package var description: String {
        if let line { return "\(file):\(line): \(message)" }
        return "\(file): \(message)"
    }
}

/// What is wrong with one value, without its location.
package struct InvalidValue: Error, Equatable, Sendable {
    package let message: String

    package init(_ message: String) { self.message = message }
}
