// JSONObject: the one-line JSON objects portctl prints with --json, keys in
// the order given. Just enough JSON for portctl's records: strings,
// integers, booleans, null, arrays and nested objects (RFC 8259 string
// escaping: every control character escaped, so a line never breaks); no
// Foundation in the CLI.

struct JSONObject {
    indirect enum Value {
        case string(String)
        case integer(Int64)
        case unsigned(UInt64)
        case bool(Bool)
        case null
        case array([Value])
        case object(JSONObject)
    }

    private var members: [(String, Value)] = []

    init(_ members: [(String, Value)]) { self.members = members }

    /// The object on one line, without a trailing newline.
    var text: String {
        "{" + members.map { "\(Self.quoted($0.0)):\(Self.render($0.1))" }.joined(separator: ",") + "}"
    }

    private static func render(_ value: Value) -> String {
        switch value {
        case .string(let s): quoted(s)
        case .integer(let i): String(i)
        case .unsigned(let u): String(u)
        case .bool(let b): b ? "true" : "false"
        case .null: "null"
        case .array(let items): "[" + items.map(render).joined(separator: ",") + "]"
        case .object(let o): o.text
        }
    }

    static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7f || (0x80...0x9f).contains(scalar.value)
                || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
