// PackagingTests: the Makefile's install and package targets through the
// real make, and the docs held against what they do, so that the README
// and the man pages cannot drift from the install again:
//   - make install says each file it installed (and make uninstall each it
//     removed), and the count;
//   - make deb checks Debian's packaging tools before building anything
//     and names the missing packages (dpkg-query reads DPKG_ADMINDIR, so a
//     made-up package database stands in for the machine's);
//   - the unit directories of `make install` (make install-list) and of
//     the Debian package (pkg-config's systemd.pc, which scripts/build-deb
//     uses) are the ones README and portd(8) name;
//   - the verbs whose waits have no bound by default are the same in
//     `portctl --help` and in portctl(1).
// The package's Depends: against README's is scripts/check-install's
// (it builds the package).

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
            deb.standardError.contains("make deb: these packages are needed and not installed: binutils dpkg-dev libnats-dev systemd\n"),
            "\(deb.standardError)")
        #expect(deb.standardError.contains("install them with: scripts/ensure-packages binutils dpkg-dev libnats-dev systemd"))
        #expect(!deb.standardOutput.contains("swift build"), "nothing is built: \(deb.standardOutput)")

        try database(["debhelper", "pkg-config", "binutils", "dpkg-dev", "libnats-dev", "systemd"])
        let check = try Self.run(["scripts/build-deb", "--check-build-deps"], environment: ["DPKG_ADMINDIR": admin.path])
        #expect(check.status == 0 && check.standardError.isEmpty, "\(check.standardError)")
    }

    @Test func docsNameTheUnitDirectoriesOfTheInstallAndThePackage() throws {
        let list = try Self.run(["make", "-s", "install-list"])
        #expect(list.status == 0, "\(list.standardError)")
        let installed = list.standardOutput.split(separator: "\n").map(String.init)
        let units = installed.filter { $0.hasSuffix("/portd.service") }.map { ($0 as NSString).deletingLastPathComponent }
        try #require(units.count == 2, "\(installed)")
        var package: [String] = []
        for variable in ["systemdsystemunitdir", "systemduserunitdir"] {
            let dir = try Self.run(["pkg-config", "--variable=\(variable)", "systemd"])
            try #require(dir.status == 0, "pkg-config: \(dir.standardError)")
            package.append(dir.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        let readme = try String(contentsOfFile: SourceTree.path("README.md"), encoding: .utf8)
        let portd8 = try String(contentsOfFile: SourceTree.path("man/portd.8"), encoding: .utf8)
        for dir in units + package {
            #expect(readme.contains("`\(dir)`") || readme.contains("(`\(dir)`)"), "README does not name \(dir)")
            #expect(portd8.contains("Pa \(dir)/"), "portd(8) FILES does not name \(dir)")
        }
    }

    @Test func helpAndManPageAgreeOnTheVerbsWithoutATimeout() throws {
        let verbs = ["register", "listen", "send", "request", "checkin", "list", "lookup", "watch", "monitor", "status", "wait"]
        // portctl --help: "... no bound for listen, checkin, ... and register: see its help".
        let help = try runPortctl(["--help"]).standardOutput.split(separator: "\n").joined(separator: " ")
            .split(separator: " ").filter { !$0.isEmpty }.joined(separator: " ")
        let noBound = try #require(help.firstMatch(of: #/no bound for ([a-z, ]+?): see its help/#)?.1)
        let helpSet = Set(noBound.replacingOccurrences(of: " and ", with: ", ").split(separator: ", ").map(String.init))
        // portctl(1)'s --timeout: "For send, request, ... it bounds each wait ... the default is 5."
        let page = try String(contentsOfFile: SourceTree.path("man/portctl.1"), encoding: .utf8)
        let item = try #require(page.firstMatch(of: #/\.It Fl -timeout Ar seconds\n(?s:(.*?))\n\.It /#)?.1)
        let bounded = try #require(item.firstMatch(of: #/For\n((?s:.*?))it bounds each wait/#)?.1)
        let boundedSet = Set(bounded.matches(of: #/\.Cm ([a-z]+)/#).map { String($0.1) })
        #expect(!boundedSet.isEmpty && boundedSet.allSatisfy(verbs.contains))
        #expect(helpSet == Set(verbs).subtracting(boundedSet), "--help: \(helpSet); portctl(1) bounds \(boundedSet)")
        // Each verb the page says waits without bound is in --help's list, named in the same item.
        for verb in helpSet { #expect(item.contains(".Cm \(verb)"), "portctl(1)'s --timeout does not name \(verb)") }
    }
}

private func isDirectory(_ path: String) -> Bool {
    var directory: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && directory.boolValue
}
