// ChildProcess: starts a program with posix_spawnp, its stdout on a pipe the
// test reads, stderr shared with the test runner. Used to run the Python
// example that speaks the wire format from the man page. Every descriptor
// PortCore and these tests create is CLOEXEC, so the child inherits only
// stdin, stdout (the pipe) and stderr.

import CPortSystem
import Glibc
import PortCore

struct ChildProcess {
    let pid: pid_t
    let stdout: Int32

    /// The package root, found from this file's path
    /// (<root>/Tests/PortCoreTests/Support/ChildProcess.swift).
    static let packageRoot: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(4)
        return parts.joined(separator: "/")
    }()

    static func spawn(_ arguments: [String]) throws -> ChildProcess {
        let (r, w) = try makePipe()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, w, 1)  // dup2 clears CLOEXEC on 1
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        defer { for a in argv { free(a) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ)
        close(w)
        if rc != 0 {
            close(r)
            throw SystemCallError(call: "posix_spawnp(\(arguments[0]))", errno: .init(rawValue: rc))
        }
        return ChildProcess(pid: pid, stdout: r)
    }

    /// Reads stdout to its end, then waits for the child; returns its exit
    /// status (-1 if it did not exit normally) and what it printed.
    func finish() -> (status: Int32, output: String) {
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(stdout, $0.baseAddress, $0.count) }
            if n > 0 {
                output += chunk[0..<n]
            } else if n == 0 || errno != EINTR {
                break
            }
        }
        close(stdout)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS, which Swift does not import.
        let exited = status & 0x7f == 0
        return (exited ? (status >> 8) & 0xff : -1, String(decoding: output, as: UTF8.self))
    }

    /// Kills the child (when a test gives up on it) and reaps it.
    func kill() -> (status: Int32, output: String) {
        _ = Glibc.kill(pid, SIGKILL)
        return finish()
    }
}
