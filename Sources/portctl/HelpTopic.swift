// HelpTopic: `portctl help [COMMAND]`, swift-argument-parser's help
// command, prints the help of the commands it recognizes and ignores the
// rest, so `portctl help nosuch` printed portctl's help and exited 0.
// portctl(1) makes an unknown command a usage error (64), so main asks here
// first: when the first word of the command line (after the options that
// may come before the verb) is `help`, every further word that is not an
// option must name a verb, one at most (verbs have no subcommands); `help
// help` is swift-argument-parser's own. Anything else stays
// swift-argument-parser's.
//
// Bare `portctl` (no argument at all) prints `shortUsage`, the verbs with
// their one-line abstracts and where to read more, on standard error, and
// exits 64 (a command is missing), instead of the whole --help.

import ArgumentParser

enum HelpTopic {
    /// Why the `help` command line `arguments` (without the program's
    /// name) is a usage error, or nil when it is not one or is not `help`.
    static func problem(_ arguments: some Collection<String>) -> String? {
        // The words, without the common options (ConnectionOptions,
        // OutputOptions) and the values of --socket and --timeout.
        var words: [String] = []
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            if argument == "--socket" || argument == "--timeout" {
                _ = rest.popFirst()
            } else if !argument.hasPrefix("-") {
                words.append(argument)
            }
        }
        guard words.first == "help" else { return nil }
        words.removeFirst()
        guard !words.isEmpty else { return nil }
        let verbs = PortctlCommand.configuration.subcommands.map { $0._commandName }
        if words.count == 1, verbs.contains(words[0]) || words[0] == "help" { return nil }
        return "unknown command '\(words.joined(separator: " "))'; the commands are \(verbs.joined(separator: ", "))"
    }
}

extension HelpTopic {
    /// What bare `portctl` prints: the verbs and where to read more.
    static var shortUsage: String {
        let verbs = PortctlCommand.configuration.subcommands.map { ($0._commandName, $0.configuration.abstract) }
        let width = verbs.map(\.0.count).max() ?? 0
        let list = verbs.map { "  \($0)\(String(repeating: " ", count: width - $0.count + 2))\($1)" }
        return (["usage: portctl [OPTIONS] COMMAND [ARGUMENTS]", "", "commands:"] + list + [
            "",
            "Every command takes --socket PATH, --user or --system, --timeout S, --json and --quiet.",
            "More: portctl help COMMAND (one command), portctl --help (all, with the exit statuses), man portctl.",
        ]).joined(separator: "\n") + "\n"
    }
}
