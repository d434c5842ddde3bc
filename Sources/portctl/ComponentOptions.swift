// ComponentOptions: the components of a message to send, from the command
// line, in the order given: `--data STRING`, `--file PATH`, `--hex HEX`,
// and `-` (standard input, at most once), mixed freely.
//
// swift-argument-parser keeps the order within one option but not across
// options, so the order of kinds is read from the raw arguments
// (`ComponentOrder.kinds`) and checked against what the parser found (the
// same number of each kind); the values come from the parser. A component
// larger than one record goes as a sealed memfd: PortCore's transport does
// that by itself. The values and their reading are ComponentValues, shared
// with the fast path of send and request (MessageLine).

import ArgumentParser
import PortCore

struct ComponentOptions: ParsableArguments {
    @Option(
        name: .customLong("data"), parsing: .unconditionalSingleValue,
        help: ArgumentHelp("A component: the UTF-8 bytes of STRING.", valueName: "string"))
    var data: [String] = []

    @Option(
        name: .customLong("file"), parsing: .unconditionalSingleValue,
        help: ArgumentHelp("A component: the contents of the file at PATH (large files go as sealed memory).", valueName: "path"),
        completion: .file())
    var file: [String] = []

    @Option(
        name: .customLong("hex"), parsing: .unconditionalSingleValue,
        help: ArgumentHelp("A component: bytes written as hexadecimal digits (spaces allowed).", valueName: "hex"))
    var hex: [String] = []

    @Argument(help: ArgumentHelp("'-': a component read from standard input (at most once).", valueName: "-"))
    var standardInput: [String] = []

    func validate() throws {
        if let problem = values.problem { throw ValidationError(problem) }
    }

    /// The values, as the code that reads the components uses them.
    var values: ComponentValues { ComponentValues(data: data, file: file, hex: hex, standardInput: standardInput) }

    /// The components, read and in command-line order.
    func components(arguments: [String] = CommandLine.arguments) throws(Failure) -> [PCPortMessage.Component] {
        try values.components(arguments: arguments)
    }
}

/// The component options as parsed, free of swift-argument-parser (as
/// ConnectionValues): what both parsers of send and request produce, and
/// what reads the components.
struct ComponentValues: Equatable {
    var data: [String] = []
    var file: [String] = []
    var hex: [String] = []
    /// The positionals after the name (valid: at most one "-").
    var standardInput: [String] = []

    /// What is wrong with the values, or nil: the one check of both parsers.
    var problem: String? {
        for s in standardInput where s != "-" {
            return "unexpected argument '\(s)' (components are --data, --file, --hex or -)"
        }
        if standardInput.count > 1 { return "'-' (standard input) can be given only once" }
        for h in hex where HexBytes.parse(h) == nil {
            return "--hex '\(h)' is not an even number of hexadecimal digits"
        }
        return nil
    }

    /// The components, read and in command-line order.
    func components(arguments: [String] = CommandLine.arguments) throws(Failure) -> [PCPortMessage.Component] {
        let kinds = ComponentOrder.kinds(in: arguments)
        let expected = data.count + file.count + hex.count + standardInput.count
        let counted = (
            kinds.filter { $0 == .data }.count, kinds.filter { $0 == .file }.count,
            kinds.filter { $0 == .hex }.count, kinds.filter { $0 == .standardInput }.count
        )
        guard kinds.count == expected, counted == (data.count, file.count, hex.count, standardInput.count) else {
            throw Failure(.usage, "cannot tell the order of the components; give each as --data/--file/--hex VALUE or -")
        }
        var d = data.makeIterator()
        var f = file.makeIterator()
        var h = hex.makeIterator()
        var result: [PCPortMessage.Component] = []
        // What a message can carry at most: its data beyond what fits in one
        // record goes as sealed memory, at most `maxLargeDataBytes` in all.
        let limits = PortLimits.default
        var left = Int(clamping: limits.maxLargeDataBytes) + limits.maxRecordSize
        // One that does not fit in a record goes as sealed memory, which a
        // receiver takes up to `maxLargeComponentBytes`: no more is read
        // (a larger file is refused before a byte of it is).
        let componentLimit = Int(clamping: limits.maxLargeComponentBytes)
        for kind in kinds {
            let bytes: [UInt8]
            let limit = min(left, componentLimit)
            // Too large for this read: for one component, or for the message.
            func tooLarge() -> String {
                limit == componentLimit
                    ? "one component may hold at most \(limits.maxLargeComponentBytes >> 20) MiB" : Self.tooLarge(limits)
            }
            switch kind {
            case .data: bytes = Array(d.next()!.utf8)
            case .hex: bytes = HexBytes.parse(h.next()!)!
            case .file:
                let path = f.next()!
                do {
                    bytes = try FileSystem.contents(ofPath: path, limit: limit)
                } catch where error.errno == .fileTooLarge {
                    throw Failure(.usage, "cannot read \(path): too large (\(tooLarge()))")
                } catch {
                    // Every bad file is a bad argument: the same status, and a reason.
                    throw Failure(.usage, Self.problem(reading: path, error, limit: limits))
                }
            case .standardInput:
                do {
                    bytes = try StandardStream.input.withDescriptor { (input) throws(SystemCallError) in
                        try Descriptor.readAll(input, limit: limit)
                    }
                } catch where error.errno == .fileTooLarge {
                    throw Failure(.usage, "cannot read standard input: too large (\(tooLarge()))")
                } catch {
                    throw Failure(.usage, Self.problem(reading: "standard input", error, limit: limits))
                }
            }
            left -= bytes.count
            if left < 0 { throw Failure(.usage, Self.tooLarge(limits)) }
            if bytes.count > componentLimit { throw Failure(.usage, Self.componentTooLarge("\(bytes.count) bytes", limits)) }
            result.append(.data(bytes))
        }
        return result
    }

    private static func componentTooLarge(_ what: String, _ limits: PortLimits) -> String {
        "a component is too large: \(what), more than the \(limits.maxLargeComponentBytes >> 20) MiB one component may hold"
    }

    private static func tooLarge(_ limits: PortLimits) -> String {
        "the message is too large: its data components add up to more than \(limits.maxLargeDataBytes >> 30) GiB, the protocol's limit"
    }

    /// Why `what` could not be read, for the user.
    private static func problem(reading what: String, _ error: SystemCallError, limit limits: PortLimits) -> String {
        switch error.errno {
        case .fileTooLarge: "cannot read \(what): too large (\(tooLarge(limits)))"
        case .isDirectory: "cannot read \(what): it is a directory"
        case .noSuchFileOrDirectory: "cannot read \(what): no such file"
        case .permissionDenied: "cannot read \(what): permission denied"
        default: "cannot read \(what): \(error.errno)"
        }
    }
}

/// The order of component options on a command line.
enum ComponentOrder {
    enum Kind: Equatable { case data, file, hex, standardInput }

    /// Whether `option` is one of the verbs' options that take a value as
    /// the next argument (so that value is not read as a component or a
    /// positional). A switch, not a Set: building a Set<String> at the
    /// first call (hashing's and Set's generic metadata) costs a send more
    /// than the rest of the reading.
    static func takesValue(_ option: String) -> Bool {
        switch option {
        case "--msgid", "--socket", "--timeout", "--max-bytes", "--data", "--file", "--hex": true
        default: false
        }
    }

    /// The kinds of components in `arguments` (the whole command line,
    /// program first), in order. The first two positionals are the verb and
    /// the name; `-` after them is standard input.
    static func kinds(in arguments: [String]) -> [Kind] {
        var kinds: [Kind] = []
        var positionals = 0
        var afterTerminator = false
        var i = 1
        while i < arguments.count {
            let a = arguments[i]
            i += 1
            if !afterTerminator && a == "--" {
                afterTerminator = true
                continue
            }
            if !afterTerminator && a.hasPrefix("--") {
                let (option, inlineValue) = split(a)
                switch option {
                case "--data": kinds.append(.data)
                case "--file": kinds.append(.file)
                case "--hex": kinds.append(.hex)
                default: break
                }
                if !inlineValue && takesValue(option) { i += 1 }
                continue
            }
            if !afterTerminator && a.hasPrefix("-") && a != "-" { continue }  // a short flag (-q)
            positionals += 1
            if positionals > 2 && a == "-" { kinds.append(.standardInput) }
        }
        return kinds
    }

    private static func split(_ a: String) -> (String, Bool) {
        guard let eq = a.firstIndex(of: "=") else { return (a, false) }
        return (String(a[..<eq]), true)
    }
}

/// Hexadecimal digits to bytes.
enum HexBytes {
    /// The bytes of `text`: pairs of hex digits, with any whitespace ignored
    /// (and an optional leading 0x); nil when anything else is there or a
    /// digit is left over.
    static func parse(_ text: String) -> [UInt8]? {
        var digits = Array(text.utf8.filter { $0 != 0x20 && $0 != 0x09 && $0 != 0x0a && $0 != 0x0d })
        if digits.count >= 2 && digits[0] == UInt8(ascii: "0") && (digits[1] | 0x20) == UInt8(ascii: "x") {
            digits.removeFirst(2)
        }
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let hi = value(digits[i]), let lo = value(digits[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func value(_ d: UInt8) -> UInt8? {
        switch d {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): d - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): d - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): d - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// A message ID: decimal or 0x-hexadecimal; IDs reserved for portd refused.
/// Any text is taken as the option's value (so `--msgid -1` is a msgid,
/// not a missing value) and judged by `check`, which says what is wrong.
struct MessageID: ExpressibleByArgument {
    let value: UInt32
    /// The text given when it is not a message ID.
    private let invalid: String?

    init?(argument: String) {
        let parsed = Self.parse(argument)
        value = parsed ?? 0
        invalid = parsed == nil ? argument : nil
    }

    /// The value of `text`, decimal or 0x hexadecimal; nil when it is not one.
    static func parse(_ text: String) -> UInt32? {
        text.lowercased().hasPrefix("0x") ? UInt32(text.dropFirst(2), radix: 16) : UInt32(text)
    }

    init(_ value: UInt32) {
        self.value = value
        self.invalid = nil
    }

    var defaultValueDescription: String { String(value) }

    /// The check every verb that sends applies in `validate()`.
    static func check(_ id: MessageID) throws {
        if let problem = problem(id) { throw ValidationError(problem) }
    }

    /// What is wrong with `id`, or nil: the one check of both parsers.
    static func problem(_ id: MessageID) -> String? {
        if let text = id.invalid {
            return "'\(text)' is not a message ID: give a number from 0 to 4294967295, decimal or 0x hexadecimal"
        }
        if WireFormat.reservedMessageIDs.contains(id.value) {
            return "msgid \(id.value) is reserved for portd (0xffff0000 and above)"
        }
        return nil
    }
}
