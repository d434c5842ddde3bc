// SourceTree: files of the package's checkout that tests read or run (man
// pages, examples, the Python fixtures beside the tests), found from this
// file's own path, so a test names them from the package root and keeps
// working when it moves to another folder.

package enum SourceTree {
    /// The package root (this file is <root>/Tests/PortTestSupport/SourceTree.swift).
    package static let root: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }()

    /// `relative` under the package root, e.g. "man/portctl.1".
    package static func path(_ relative: String) -> String { "\(root)/\(relative)" }
}
