// ConfigurationPaths: where portd reads its configuration, first match wins:
//   1. `--config PATH`: PATH, and the drop-in directory PATH.d;
//   2. the system instance: /etc/portd/portd.conf and /etc/portd/portd.conf.d;
//   3. the per-user instance: $XDG_CONFIG_HOME/portd/portd.conf (when
//      XDG_CONFIG_HOME is set and absolute, as the XDG base-directory
//      specification says), else $HOME/.config/portd/portd.conf, with the
//      drop-in directory beside it; with neither variable, no file at all.
// The drop-in directory is always the file's path plus ".d" (systemd's
// convention: foo.conf, foo.conf.d/*.conf). Pure: the environment comes in
// as a closure, like DaemonPaths.

import PortCore

struct ConfigurationPaths: Equatable, Sendable {
    /// The main file, or nil when there is none to read.
    let file: String?
    /// The drop-in directory, or nil when there is none to read.
    let dropInDirectory: String?

    /// The system instance's file.
    static let systemFile = "/etc/portd/portd.conf"
    /// The per-user file, relative to the XDG configuration directory.
    static let userFileInConfigHome = "portd/portd.conf"

    init(file: String?) {
        self.file = file
        dropInDirectory = file.map { $0 + ".d" }
    }

    /// The paths for `--config` (if given) and the instance (nil: the user instance).
    static func resolve(
        explicitFile: String?, instance: DaemonInstance?, environment: (String) -> String?
    ) -> ConfigurationPaths {
        if let explicitFile { return ConfigurationPaths(file: explicitFile) }
        switch instance ?? .user {
        case .system:
            return ConfigurationPaths(file: systemFile)
        case .user:
            if let home = environment("XDG_CONFIG_HOME"), home.hasPrefix("/") {
                return ConfigurationPaths(file: "\(home)/\(userFileInConfigHome)")
            }
            if let home = environment("HOME"), home.hasPrefix("/") {
                let base = home.hasSuffix("/") ? String(home.dropLast()) : home
                return ConfigurationPaths(file: "\(base)/.config/\(userFileInConfigHome)")
            }
            return ConfigurationPaths(file: nil)
        }
    }
}
