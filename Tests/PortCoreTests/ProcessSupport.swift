// Starting peer processes for tests: posix_spawn with a descriptor passed as
// fd 3, and waiting for them.

import Foundation
import Glibc

enum PeerProcess {
    static var fixtures: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures").path
    }

    /// Starts `argv` with `fd` as its descriptor 3 and stdout to `stdoutFD` if given.
    static func spawn(_ argv: [String], passing fd: Int32, stdoutFD: Int32? = nil) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fd, 3)
        if let o = stdoutFD { posix_spawn_file_actions_adddup2(&actions, o, 1) }
        var pid: pid_t = 0
        let cargs = argv.map { strdup($0) } + [nil]
        defer { cargs.forEach { free($0) } }
        let r = posix_spawnp(&pid, argv[0], &actions, nil, cargs, environ)
        precondition(r == 0, "posix_spawnp \(argv[0]): \(r)")
        return pid
    }

    /// Waits for `pid`; returns its exit status (or 128 + signal).
    static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        if status & 0x7f == 0 { return (status >> 8) & 0xff }
        return 128 + (status & 0x7f)
    }
}
