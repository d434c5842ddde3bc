// JSONObject: the one-line JSON objects portctl prints with --json, keys in
// the order given. Just enough JSON for flat records of strings and
// integers (RFC 8259 string escaping); no Foundation in the CLI.

struct JSONObject {
    enum Value {
        case string(String)
        case integer(Int64)
        case unsigned(UInt64)
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
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
