// PackagingTests: the Makefile's install and package targets through the
// real make:
//   - make install says each file it installed (and make uninstall each it
//     removed), and the count;
//   - make deb checks Debian's packaging tools before building anything
//     and names the missing packages (dpkg-query reads DPKG_ADMINDIR, so a
//     made-up package database stands in for the machine's).

import Foundation
import Glibc
import Testing

import PortTestSupport

@Suite struct PackagingTests {
    /// Runs `command` in the package root to completion.
    static func run(_ command: [String], environment: [String: String] = [:]) throws -> CommandResult {
        let child = try ChildProcess(
            executable: "/usr/bin/env", arguments: ["-C", SourceTree.root] + command,
            environment: ChildProcess.cleanEnvironment(environment))
        let status = try child.waitForExit()
        return CommandResult(status: status, standardOutput: child.standardOutput, standardError: child.standardError)
    }

    @Test func installAndUninstallSayWhatTheyDid() throws {
        let dest = try TemporaryDirectory()
        // The debug binaries stand in for the release build (not stripped: STRIP=true).
        let common = ["DESTDIR=\(dest.path)", "BUILDDIR=\(Binaries.directory)", "STRIP=true"]
        let install = try Self.run(["make", "--no-print-directory", "install-files"] + common)
        #expect(install.status == 0, "\(install.standardError)")
        let lines = install.standardOutput.split(separator: "\n").map(String.init)
        let said = Set(lines.filter { $0.hasPrefix("installed ") }.map { String($0.dropFirst("installed ".count)) })
        let files = try FileManager.default.subpathsOfDirectory(atPath: dest.path)
            .map { dest.appending($0) }.filter { !isDirectory($0) }
        #expect(said == Set(files), "\(install.standardOutput)")
        #expect(files.count > 20)
        #expect(lines.last?.hasPrefix("install-tree: installed \(files.count) files (make uninstall removes them") == true, "\(lines.last ?? "")")

        let uninstall = try Self.run(["make", "--no-print-directory", "uninstall"] + common)
        #expect(uninstall.status == 0, "\(uninstall.standardError)")
        let removed = uninstall.standardOutput.split(separator: "\n").filter { $0.hasPrefix("removed ") }
        #expect(Set(removed.map { String($0.dropFirst("removed ".count)) }) == Set(files))
        #expect(uninstall.standardOutput.hasSuffix("install-tree: removed \(files.count) files\n"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dest.path).isEmpty)
    }

    @Test func makeDebNamesTheMissingPackagesFirst() throws {
        let admin = try TemporaryDirectory()
        func database(_ packages: [String]) throws {
            let entries = packages.map {
                "Package: \($0)\nStatus: install ok installed\nPriority: optional\nSection: devel\n"
                    + "Maintainer: nobody <nobody@example.org>\nArchitecture: all\nVersion: 1\nDescription: stand-in\n"
            }
            try entries.joined(separator: "\n").write(toFile: admin.appending("status"), atomically: true, encoding: .utf8)
        }
        try database(["debhelper", "pkg-config"])
        let deb = try Self.run(["make", "--no-print-directory", "deb"], environment: ["DPKG_ADMINDIR": admin.path])
        #expect(deb.status != 0)
        #expect(
            deb.standardError.contains("make deb: these packages are needed and not installed: binutils dpkg-dev systemd\n"),
            "\(deb.standardError)")
        #expect(deb.standardError.contains("install them with: scripts/ensure-packages binutils dpkg-dev systemd"))
        #expect(!deb.standardOutput.contains("swift build"), "nothing is built: \(deb.standardOutput)")

        try database(["debhelper", "pkg-config", "binutils", "dpkg-dev", "systemd"])
        let check = try Self.run(["scripts/build-deb", "--check-build-deps"], environment: ["DPKG_ADMINDIR": admin.path])
        #expect(check.status == 0 && check.standardError.isEmpty, "\(check.standardError)")
    }

}

private func isDirectory(_ path: String) -> Bool {
    var directory: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
}
