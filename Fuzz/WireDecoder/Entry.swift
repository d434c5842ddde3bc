// Entry: how the wire-decoder fuzz target is run. Built by scripts/fuzz
// (-D FUZZING, -sanitize=fuzzer,address) it is a libFuzzer target; in a
// normal build it replays the files (and directories of files) named on
// its command line, so the seed corpus is also a regression suite
// (Tests/PortWireTests/FuzzCorpusTests runs it).

import PortSystem

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    WireDecoderFuzz.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
#else
@main
enum Replay {
    static func main() throws {
        var count = 0
        for argument in CommandLine.arguments.dropFirst() {
            let files = ((try? FileSystem.entries(ofDirectory: argument)) ?? nil)?.sorted().map { "\(argument)/\($0)" } ?? [argument]
            for file in files {
                let bytes = try FileSystem.contents(ofPath: file)
                bytes.withUnsafeBytes { WireDecoderFuzz.run($0) }
                count += 1
            }
        }
        print("replayed \(count) inputs")
    }
}
#endif
