// MessageLine: the fast path of `portctl send` and `portctl request`, a
// parser of their command lines written out by hand, that either returns
// exactly the values swift-argument-parser would (a MessageCall) or nil,
// "not mine". main tries it first and, on nil, hands the line to
// swift-argument-parser, so --help, every usage error and its message,
// completions and every other verb stay swift-argument-parser's. It exists
// because swift-argument-parser's reflection costs ten times a whole
// dbus-send process (docs/BENCHMARKS.md, "portctl's start-up, counted"): at
// run time it touches no swift-argument-parser type.
//
// Invariant: for every command line, MessageLine.parse returns nil or a
// MessageCall equal to the one swift-argument-parser's Send or Request
// makes of it; when swift-argument-parser refuses a line, parse returns
// nil. MessageLineTests checks that over a corpus of spellings and
// thousands of random lines. So the grammar here is the common subset,
// and nil is the answer to anything else:
//   - `send` or `request` first, or after the options that may come before
//     the verb (--socket, --timeout, --user, --system, --json, --quiet, -q);
//   - then the name, `-` (standard input, once) and the verb's options in
//     any order: --msgid, --data, --file, --hex, --socket, --timeout,
//     --max-bytes (request) as `--opt VALUE` or `--opt=VALUE`, where a
//     separate VALUE must not begin with `-` (swift-argument-parser's
//     root command would read `-q` or `--json` there as its own, whatever
//     option precedes it; and a negative --timeout or --max-bytes, which
//     swift-argument-parser takes as the value, its parsing being
//     `.unconditional`, is refused by the same checks as here, with their
//     message); flags --wait, --raw (request), --user, --system,
//     --json, --quiet, -q;
//   - `--`, after which everything is the name or `-`.
// nil for: any other option (--help, -h, --version, a completion request,
// an option of another verb, grouped short flags), a flag with `=`, an
// empty `=` value (swift-argument-parser then reads the next argument), an
// option that takes a value given twice (the benchmarks force
// swift-argument-parser's path that way), a missing or invalid value, and
// every failure of the checks the verbs' validate() applies (the same
// functions: ConnectionValues.problem, ComponentValues.problem,
// MessageID.problem, MessageRendering.problem).

import PortCore

enum MessageLine {
    /// The call `arguments` (the command line without the program's name)
    /// asks for, or nil when swift-argument-parser is to read it.
    static func parse(_ arguments: some Collection<String>) -> MessageCall? {
        var verb: MessageCall.Verb? = nil
        var name: String? = nil
        var msgid: UInt32? = nil
        var components = ComponentValues()
        var connection = ConnectionValues()
        var output = OutputValues()
        var wait = false
        var raw = false
        var maxBytes: Int? = nil
        var socketGiven = false
        var timeoutGiven = false

        var rest = arguments[...]
        var afterTerminator = false
        while let argument = rest.popFirst() {
            let bytes = argument.utf8
            let first = bytes.first
            if afterTerminator || first != UInt8(ascii: "-") || bytes.count == 1 {
                // A positional (`-` alone is one too): the verb, the name, then `-`.
                if verb == nil {
                    switch argument {
                    case "send": verb = .send
                    case "request": verb = .request
                    default: return nil
                    }
                } else if name == nil {
                    name = argument
                } else {
                    guard argument == "-", components.standardInput.isEmpty else { return nil }
                    components.standardInput.append(argument)
                }
                continue
            }
            if argument == "--" {
                guard verb != nil else { return nil }
                afterTerminator = true
                continue
            }
            if argument == "-q" {
                output.quiet = true
                continue
            }
            guard bytes.count > 2, bytes.dropFirst().first == UInt8(ascii: "-") else { return nil }

            // A long option: --name or --name=value.
            let option: Substring
            var attached: Substring? = nil
            if let equals = argument.firstIndex(of: "=") {
                option = argument[..<equals]
                attached = argument[argument.index(after: equals)...]
                guard !attached!.isEmpty else { return nil }
            } else {
                option = argument[...]
            }
            /// The option's value: attached, or the next argument when it
            /// is one swift-argument-parser reads as a value too.
            func value() -> String? {
                if let attached { return String(attached) }
                guard let next = rest.popFirst(), next.utf8.first != UInt8(ascii: "-") else { return nil }
                return next
            }
            let isVerbOption = verb != nil
            switch option {
            // Flags (no value).
            case "--json", "--quiet", "--user", "--system", "--wait", "--raw":
                guard attached == nil else { return nil }
                switch option {
                case "--json": output.json = true
                case "--quiet": output.quiet = true
                case "--user", "--system":
                    connection.instance = option == "--user" ? .user : .system
                case "--wait":
                    guard isVerbOption else { return nil }
                    wait = true
                default:
                    guard verb == .request else { return nil }
                    raw = true
                }
            // Options with a value that may come before the verb.
            case "--socket":
                guard !socketGiven, let path = value() else { return nil }
                socketGiven = true
                connection.socket = path
            case "--timeout":
                guard !timeoutGiven, let text = value(), ConnectionValues.problem(socket: nil, timeout: text) == nil else {
                    return nil
                }
                timeoutGiven = true
                connection.timeout = Double(text)
            // The verb's options with a value.
            case "--msgid":
                guard isVerbOption, msgid == nil, let text = value(), let id = MessageID.parse(text),
                    MessageID.problem(MessageID(id)) == nil
                else { return nil }
                msgid = id
            case "--data":
                guard isVerbOption, let text = value() else { return nil }
                components.data.append(text)
            case "--file":
                guard isVerbOption, let text = value() else { return nil }
                components.file.append(text)
            case "--hex":
                guard isVerbOption, let text = value() else { return nil }
                components.hex.append(text)
            case "--max-bytes":
                guard verb == .request, maxBytes == nil, let text = value(), let n = Int(text),
                    MessageRendering.problem(maxBytes: n) == nil
                else { return nil }
                maxBytes = n
            default:
                return nil
            }
        }
        guard let verb, let name, let msgid, NameServerProtocol.nameProblem(name) == nil,
            components.problem == nil, ConnectionValues.problem(socket: connection.socket, timeout: nil) == nil,
            !(raw && output.json)
        else { return nil }
        return MessageCall(
            verb: verb, name: name, msgid: msgid, wait: wait, components: components, connection: connection,
            output: output, raw: raw, maxBytes: maxBytes)
    }
}
