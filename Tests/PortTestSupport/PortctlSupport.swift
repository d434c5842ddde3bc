// PortctlSupport: small helpers for the end-to-end tests that read
// portctl's output: JSON lines parsed with Foundation, fields of `status`'s
// aligned text, and a unique name per test.

import Foundation
import Glibc
import Testing

/// The JSON objects of `output`, one per non-empty line.
package func jsonLines(_ output: String) throws -> [[String: Any]] {
    try output.split(separator: "\n").map { line in
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
    }
}

/// The one JSON object `output` holds.
package func jsonObject(_ output: String) throws -> [String: Any] {
    let lines = try jsonLines(output)
    try #require(lines.count == 1, "expected one JSON line, got \(output)")
    return lines[0]
}

/// The value of "key:   value" in aligned text output.
package func textField(_ output: String, _ key: String) -> String? {
    for line in output.split(separator: "\n") where line.hasPrefix(key + ":") {
        return line.dropFirst(key.count + 1).trimmingCharacters(in: .whitespaces)
    }
    return nil
}

/// An integer member of a JSON object.
package func int(_ object: [String: Any]?, _ key: String) -> Int? { (object?[key] as? NSNumber)?.intValue }

/// A name no other test uses.
package func uniqueName(_ base: String) -> String { "\(base)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))" }
