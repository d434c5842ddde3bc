// CompletionTests: the bash completions `make install` installs, generated
// by scripts/gen-completions from the built portctl and portd, driven in a
// real bash as readline would call them (COMP_WORDS, COMP_CWORD, COMP_LINE,
// COMP_POINT, then the function `complete -F` names), against a real portd:
// files for every option that takes a path (--file, --socket; portd's
// --socket and --config), the verbs after `portctl help`, only the declared
// ports after `listen --declared`, and portd's options.

import Foundation
import Glibc
import Testing

import PortTestSupport

@Suite struct CompletionTests {
    /// A directory with the generated scripts, and one with files to complete.
    final class Fixture {
        let scripts: TemporaryDirectory
        let files: TemporaryDirectory

        init() throws {
            scripts = try TemporaryDirectory()
            files = try TemporaryDirectory()
            let generate = try ChildProcess(
                executable: SourceTree.path("scripts/gen-completions"),
                arguments: [try Binaries.portctl, try Binaries.portd, scripts.path])
            #expect(try generate.waitForExit() == 0, "\(generate.standardError)")
            for name in ["comp1.txt", "comp2.sock", "other"] {
                _ = FileManager.default.createFile(atPath: files.appending(name), contents: Data())
            }
        }

        /// What bash offers for the last of `words` (the word being
        /// completed; "" for a new one), with the script for `words[0]`
        /// sourced, in the files' directory, with `environment`.
        func complete(_ words: [String], environment: [String: String] = [:]) throws -> [String] {
            let (script, function) =
                words[0] == "portd" ? ("portd.bash", "_portd") : ("portctl.bash", "__portctl_complete_with_names")
            let bash = try ChildProcess(
                executable: "/bin/bash",
                arguments: [
                    "-c",
                    #"""
                    source "$1" && cd "$2" || exit 99
                    f="$3"; shift 3
                    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
                    COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
                    "$f" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
                    [[ "$(complete -p "${COMP_WORDS[0]}")" == "complete -o filenames -F $f ${COMP_WORDS[0]}" ]] || exit 98
                    printf '%s\n' "${COMPREPLY[@]}"
                    """#,
                    "_", scripts.appending(script), files.path, function,
                ] + words,
                environment: ChildProcess.cleanEnvironment(
                    environment.merging(["PATH": "\(Binaries.directory):/usr/bin:/bin"]) { a, _ in a }))
            let status = try bash.waitForExit()
            #expect(status == 0, "bash: \(status) \(bash.standardError)")
            return bash.standardOutput.split(separator: "\n").map(String.init).filter { !$0.isEmpty }.sorted()
        }
    }

    @Test func pathOptionsCompleteFiles() throws {
        let f = try Fixture()
        let dir = f.files.path
        #expect(try f.complete(["portctl", "send", "x", "--msgid", "1", "--file", "comp"]) == ["comp1.txt", "comp2.sock"])
        #expect(try f.complete(["portctl", "request", "x", "--file", ""]) == ["comp1.txt", "comp2.sock", "other"])
        #expect(try f.complete(["portctl", "--socket", "\(dir)/c"]) == ["\(dir)/comp1.txt", "\(dir)/comp2.sock"])
        #expect(try f.complete(["portctl", "list", "--socket", "\(dir)/o"]) == ["\(dir)/other"])
        #expect(try f.complete(["portd", "--config", "comp"]) == ["comp1.txt", "comp2.sock"])
        #expect(try f.complete(["portd", "--check-config", "--socket", "\(dir)/comp2"]) == ["\(dir)/comp2.sock"])
    }

    @Test func helpOffersTheVerbs() throws {
        let f = try Fixture()
        #expect(try f.complete(["portctl", "help", ""]) == (PortctlManPageTests.verbs + ["help"]).sorted())
        #expect(try f.complete(["portctl", "--json", "help", "l"]) == ["list", "listen", "lookup"])
        // Bare `portctl <TAB>` still offers the verbs with the options.
        #expect(try f.complete(["portctl", "mo"]) == ["monitor"])
    }

    @Test func portdCompletesItsOptions() throws {
        let f = try Fixture()
        #expect(try f.complete(["portd", "--c"]) == ["--check-config", "--config"])
        #expect(try f.complete(["portd", "--s"]) == ["--socket", "--system"])
    }

    @Test func declaredOffersOnlyDeclaredPorts() throws {
        let declared = uniqueName("declared")
        let d = try DaemonProcess.started(declaring: [declared])
        let registered = uniqueName("registered")
        let listener = try d.startPortctl(["listen", registered])
        try listener.waitForStandardError(containing: "listening on \(registered)")
        let environment = d.environment
        let f = try Fixture()
        #expect(try f.complete(["portctl", "listen", "--declared", ""], environment: environment) == [declared])
        #expect(try f.complete(["portctl", "register", "--declared", "--no-queue", ""], environment: environment) == [declared])
        #expect(try f.complete(["portctl", "listen", ""], environment: environment) == [declared, registered].sorted())
        #expect(try f.complete(["portctl", "lookup", ""], environment: environment) == [declared, registered].sorted())
        listener.signal(SIGTERM)
        _ = try listener.waitForExit()
    }
}
