// FuzzCorpusTests: the seed corpus of the wire-decoder fuzz target
// (Fuzz/Corpus/wire-decoder, written by Fuzz/make-seeds) replayed through
// the target's own checks (Fuzz/WireDecoder/WireDecoderFuzz.swift) in the
// normal test run, so the seeds stay valid inputs and the checks stay
// compiled and exercised without libFuzzer. A failed check traps, which
// fails the run.

import PortSystem
import PortWire
import Testing

@testable import FuzzWireDecoder

@Suite struct FuzzCorpusTests {
    /// Fuzz/Corpus/wire-decoder in this checkout.
    static let corpus: String = {
        var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)  // Tests/PortWireTests/FuzzCorpusTests.swift
        return (parts + ["Fuzz", "Corpus", "wire-decoder"]).joined(separator: "/")
    }()

    @Test func seedCorpusPassesTheTargetsChecks() throws {
        let files = try #require(try FileSystem.entries(ofDirectory: Self.corpus)).sorted()
        #expect(files.count >= 10, "the seeds of Fuzz/make-seeds")
        for file in files {
            let bytes = try FileSystem.contents(ofPath: "\(Self.corpus)/\(file)")
            bytes.withUnsafeBytes { WireDecoderFuzz.run($0) }
        }
    }

    @Test func theManPagesExampleDecodesAndEncodesAgain() throws {
        // The 46-byte record of portd-protocol(7)'s EXAMPLES, with its three
        // descriptors: the seed the others are variations of. Decoded here
        // directly too, so that a seed that stopped decoding shows.
        let bytes = try FileSystem.contents(ofPath: "\(Self.corpus)/man-example-46-bytes")
        #expect(bytes.first == 3)
        let view = try bytes.dropFirst().withUnsafeBytes { try WireDecoder.decode($0, descriptorCount: 3) }
        #expect(view.msgid == 0x0102_0304 && view.componentCount == 4)
    }
}
