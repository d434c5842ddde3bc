// OutputFormatTests: what portctl prints, without a daemon: escaping of
// bytes for people (never a raw control byte), JSON (parsed back with
// Foundation's parser), base64, timestamps, tables, and the rendering of a
// whole message in text and JSON.

import Foundation
import Testing

import PortCore
import PortWire
import PortTestSupport
@testable import portctl

@Suite struct TextEscapeTests {
    @Test func textStaysText() {
        #expect(TextEscape.escape(Array("hello, world".utf8)) == "hello, world")
        #expect(TextEscape.escape(Array("grüße ✓ 日本".utf8)) == "grüße ✓ 日本")
    }

    @Test func controlBytesAreEscaped() {
        let bytes: [UInt8] = [0, 1, 0x1b, 0x5b, 0x33, 0x31, 0x6d, 0x0a, 0x0d, 0x09, 0x7f, 0x5c, 0x22]
        #expect(TextEscape.escape(bytes) == #"\0\x01\x1b[31m\n\r\t\x7f\\\""#)
    }

    @Test func invalidUTF8AndC1AndBidiAreEscaped() {
        // A lone continuation byte, a truncated sequence, an overlong "/", a surrogate, C1 NEL, U+202E.
        #expect(TextEscape.escape([0x80]) == #"\x80"#)
        #expect(TextEscape.escape([0xe2, 0x9c]) == #"\xe2\x9c"#)
        #expect(TextEscape.escape([0xc0, 0xaf]) == #"\xc0\xaf"#)
        #expect(TextEscape.escape([0xed, 0xa0, 0x80]) == #"\xed\xa0\x80"#)
        #expect(TextEscape.escape([0xc2, 0x85]) == #"\u{85}"#)
        #expect(TextEscape.escape(Array("a\u{202E}b".utf8)) == #"a\u{202e}b"#)
    }

    @Test func everyByteValueComesOutPrintable() {
        let all = (0...255).map { UInt8($0) }
        let escaped = TextEscape.escape(all)
        for scalar in escaped.unicodeScalars {
            #expect(scalar.value >= 0x20 && scalar.value != 0x7f && !(0x80...0x9f).contains(scalar.value))
        }
    }
}

@Suite struct JSONTests {
    private func parse(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func nestedValuesParseBack() throws {
        let object = JSONObject([
            ("s", .string("a\"b\\c\n\u{0}\u{1b}\u{2028}")), ("i", .integer(-3)), ("u", .unsigned(UInt64.max)),
            ("t", .bool(true)), ("f", .bool(false)), ("n", .null),
            ("a", .array([.integer(1), .string("x"), .object(JSONObject([("k", .null)]))])),
        ])
        #expect(!object.text.contains("\n"))
        let parsed = try parse(object.text)
        #expect(parsed["s"] as? String == "a\"b\\c\n\u{0}\u{1b}\u{2028}")
        #expect((parsed["i"] as? NSNumber)?.intValue == -3)
        #expect((parsed["u"] as? NSNumber)?.uint64Value == UInt64.max)
        #expect(parsed["t"] as? Bool == true)
        #expect(parsed["f"] as? Bool == false)
        #expect(parsed["n"] is NSNull)
        let a = try #require(parsed["a"] as? [Any])
        #expect(a.count == 3)
        #expect((a[2] as? [String: Any])?["k"] is NSNull)
    }

    @Test func keysKeepTheirOrder() {
        #expect(JSONObject([("b", .integer(1)), ("a", .integer(2))]).text == #"{"b":1,"a":2}"#)
    }
}

@Suite struct Base64Tests {
    @Test func rfc4648Vectors() {
        let vectors = ["": "", "f": "Zg==", "fo": "Zm8=", "foo": "Zm9v", "foob": "Zm9vYg==", "fooba": "Zm9vYmE=", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors { #expect(Base64.encode(Array(plain.utf8)) == encoded) }
    }

    @Test func matchesFoundation() {
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        #expect(Base64.encode(bytes) == Data(bytes).base64EncodedString())
    }
}

@Suite struct TimestampTableTests {
    @Test func utcDates() {
        #expect(Timestamp.utc(milliseconds: 0) == "1970-01-01 00:00:00.000 UTC")
        #expect(Timestamp.utc(milliseconds: 951_782_400_123) == "2000-02-29 00:00:00.123 UTC")
        #expect(Timestamp.utc(milliseconds: 1_795_279_621_007) == "2026-11-21 16:47:01.007 UTC")
    }

    @Test func tableColumnsAlign() {
        #expect(Table.render([["NAME", "PID"], ["a-long-name", "7"]]) == "NAME         PID\na-long-name  7")
    }

    @Test func uptime() {
        #expect(Status.formatUptime(milliseconds: 3042) == "3.042s")
        #expect(Status.formatUptime(milliseconds: 90_061_005) == "1d 1h 1min 1.005s")
    }
}

@Suite struct MessageRenderingTests {
    static let message = PCPortMessage(
        msgid: 7, components: [.data(Array("héllo".utf8)), .data([0, 1, 2, 0xff]), .data([])])

    @Test func textLines() {
        #expect(MessageRendering.heading(Self.message) == "msgid=7")
        #expect(MessageRendering.componentLines(Self.message, indent: "  ") == [#"  "héllo""#, #"  "\0\x01\x02\xff""#, #"  """#])
    }

    @Test func longComponentsAreCutInText() {
        let big = PCPortMessage(msgid: 1, components: [.data([UInt8](repeating: 0x41, count: 10_000))])
        let line = MessageRendering.componentLines(big)[0]
        #expect(line.hasPrefix("\"" + String(repeating: "A", count: MessageRendering.textLimit) + "\""))
        #expect(line.hasSuffix("(10000 bytes, first 4096 shown)"))
        let short = MessageRendering.componentLines(big, limit: 3)[0]
        #expect(short == "\"AAA\"… (10000 bytes, first 3 shown)")
        #expect(MessageRendering.componentLines(big, limit: 10_000)[0].count == 10_002)
    }

    /// A memfd-sized component is cut in JSON: its length, "truncated", and
    /// the first bytes only, as text when they are UTF-8 (never splitting a
    /// character), else as base64.
    @Test func longComponentsAreCutInJSON() throws {
        func component(_ bytes: [UInt8], limit: Int) throws -> [String: Any] {
            let text = MessageRendering.json(PCPortMessage(msgid: 1, components: [.data(bytes)]), limit: limit).text
            let parsed = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            return try #require((parsed["components"] as? [[String: Any]])?.first)
        }
        let big = [UInt8](repeating: 0x41, count: 200_000)
        let cut = try component(big, limit: MessageRendering.jsonLimit)
        #expect((cut["length"] as? NSNumber)?.intValue == 200_000)
        #expect(cut["truncated"] as? Bool == true)
        #expect((cut["text"] as? String)?.utf8.count == 65536)
        // At the limit nothing is cut, and "truncated" is absent.
        let whole = try component(Array(big[..<10]), limit: 10)
        #expect(whole["truncated"] == nil && whole["text"] as? String == "AAAAAAAAAA")
        // "é" is two bytes: a limit of 2 would split the second one.
        let accents = try component(Array("ééé".utf8), limit: 3)
        #expect(accents["truncated"] as? Bool == true && accents["text"] as? String == "é")
        // Bytes that are not UTF-8 (whatever follows them) go as base64.
        let binary = try component([0xff, 0, 1, 2, 0x41, 0x41], limit: 4)
        #expect(binary["base64"] as? String == "/wABAg==" && binary["text"] == nil)
        // Limit 0: the length only.
        let none = try component(big, limit: 0)
        #expect(none["truncated"] as? Bool == true && none["text"] as? String == "")
        #expect(MessageRendering.limit(nil, json: true) == 65536 && MessageRendering.limit(nil, json: false) == 4096)
        #expect(MessageRendering.limit(7, json: true) == 7)
    }

    @Test func jsonHasTextOrBase64() throws {
        let text = MessageRendering.json(Self.message, leading: [("name", .string("svc"))]).text
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(parsed["name"] as? String == "svc")
        #expect((parsed["msgid"] as? NSNumber)?.intValue == 7)
        #expect(parsed["pid"] is NSNull)
        #expect(parsed["reply_port"] as? Bool == false)
        let components = try #require(parsed["components"] as? [[String: Any]])
        #expect(components.count == 3)
        #expect(components[0]["text"] as? String == "héllo")
        #expect((components[0]["length"] as? NSNumber)?.intValue == 6)
        #expect(components[1]["base64"] as? String == "AAEC/w==")
        #expect(components[1]["text"] == nil)
        #expect(components[2]["text"] as? String == "")
    }

    @Test func rawIsTheDataConcatenated() {
        #expect(MessageRendering.rawBytes(Self.message) == Array("héllo".utf8) + [0, 1, 2, 0xff])
    }
}

/// --max-bytes in JSON (issue 14): a cut that splits a character leaves
/// its first bytes out; bytes that are not UTF-8 anywhere in what is shown
/// make it base64, as portctl(1) promises.
@Suite struct JSONCutTests {
    private func cut(_ bytes: [UInt8], _ limit: Int) -> String {
        bytes.withUnsafeBytes { MessageRendering.json(ofBytes: $0, limit: limit).text }
    }

    @Test func invalidBytesBeforeTheCutAreBase64NotDropped() {
        // A, FF, FF, R, then more: cut to 4 bytes.
        #expect(cut([0x41, 0xFF, 0xFF, 0x52, 0x53, 0x54], 4) == #"{"kind":"data","length":6,"truncated":true,"base64":"Qf//Ug=="}"#)
    }

    @Test func aCharacterSplitByTheCutIsLeftOut() {
        // "aé" is 61 C3 A9; cut to 2 bytes splits é.
        #expect(cut([0x61, 0xC3, 0xA9, 0x62], 2) == #"{"kind":"data","length":4,"truncated":true,"text":"a"}"#)
        // A four-byte character (F0 9F 98 80) cut after three of its bytes.
        #expect(cut([0x61, 0xF0, 0x9F, 0x98, 0x80], 4) == #"{"kind":"data","length":5,"truncated":true,"text":"a"}"#)
        // A whole character at the end is kept.
        #expect(cut([0x61, 0xC3, 0xA9, 0x62], 3) == #"{"kind":"data","length":4,"truncated":true,"text":"aé"}"#)
    }
}
