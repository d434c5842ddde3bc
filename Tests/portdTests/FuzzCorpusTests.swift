// FuzzCorpusTests: the seed corpus of the portd-requests fuzz target
// (Fuzz/Corpus/portd-requests, written by Fuzz/make-seeds) replayed through
// the target (Fuzz/PortdRequests/PortdRequestsFuzz.swift: fake clients'
// records decoded and handed to a real name server through
// NameServerHarness) in the normal test run, so that the seeds stay valid
// sessions and the harness stays compiled and working. A failed check
// (a trap in the name server) fails the run.

import PortSystem
import Testing

@testable import FuzzPortdRequests

@Suite struct FuzzCorpusTests {
    /// Fuzz/Corpus/portd-requests in this checkout.
    static let corpus: String = {
        var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)  // Tests/portdTests/FuzzCorpusTests.swift
        return (parts + ["Fuzz", "Corpus", "portd-requests"]).joined(separator: "/")
    }()

    @Test func seedCorpusPassesTheTargetsChecks() throws {
        let files = try #require(try FileSystem.entries(ofDirectory: Self.corpus)).sorted()
        #expect(files.count >= 7, "the seeds of Fuzz/make-seeds")
        for file in files {
            let bytes = try FileSystem.contents(ofPath: "\(Self.corpus)/\(file)")
            // Other tests open and close descriptors meanwhile: the count
            // of this process's descriptors says nothing here.
            bytes.withUnsafeBytes { PortdRequestsFuzz.run($0, checkDescriptors: false) }
        }
    }
}
