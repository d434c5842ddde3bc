// swift-tools-version:6.0
// portd: named message ports for Linux. See README.md and docs/DESIGN.md,
// which draws the targets below and the one direction their arrows take.
import PackageDescription

let package = Package(
    name: "portd",
    products: [
        .library(name: "PortCore", targets: ["PortCore"]),
        .executable(name: "portd", targets: ["portd"]),
        .executable(name: "portctl", targets: ["portctl"]),
        .executable(name: "portd-bridge", targets: ["portd-bridge"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
    ],
    targets: [
        // Kernel interfaces Swift cannot import by itself (function-like macros,
        // GNU extensions). Nothing but thin C; every policy lives in Swift.
        // Links libdispatch for the main queue's run-loop interface (the
        // toolchain ships it; every Swift program on Linux loads it already).
        .target(name: "CPortSystem", linkerSettings: [.linkedLibrary("dispatch")]),
        // libsystemd, linked by portd only.
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),

        // The layers of the library, each importing only those below it.
        // PortSystem: every system call, once (the only Swift target that
        // imports Glibc or CPortSystem).
        .target(
            name: "PortSystem",
            dependencies: [
                "CPortSystem",
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // PortWire: the record format, pure values, no I/O.
        .target(name: "PortWire"),
        // PortRunLoop: run loops, modes, sources, timers, observers.
        .target(name: "PortRunLoop", dependencies: ["PortSystem"]),
        // PortMessaging: ports, send rights, port messages, request/reply, check-in.
        .target(
            name: "PortMessaging",
            dependencies: [
                "PortSystem", "PortWire", "PortRunLoop",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // PortNameProtocol: the name server's vocabulary, shared by the
        // client and portd; pure values over PortWire.
        .target(name: "PortNameProtocol", dependencies: ["PortWire"]),
        // PortNameClient: the client of portd (PortNameServer).
        .target(
            name: "PortNameClient",
            dependencies: ["PortSystem", "PortWire", "PortRunLoop", "PortMessaging", "PortNameProtocol"]
        ),
        // PortCore: the one import; re-exports the layers above.
        .target(
            name: "PortCore",
            dependencies: ["PortSystem", "PortWire", "PortRunLoop", "PortMessaging", "PortNameProtocol", "PortNameClient"]
        ),
        // PortActivation: systemd's socket-activation protocol, the launching
        // side (LISTEN_FDS), for portctl register and portd's Exec=.
        .target(name: "PortActivation", dependencies: ["PortSystem"]),

        .target(
            name: "PortDaemon",
            dependencies: [
                "PortCore", "PortActivation", "CSystemd", "PortWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(name: "portd", dependencies: ["PortDaemon"]),
        // libnats, the official NATS C client, linked by portd-bridge only.
        .systemLibrary(
            name: "CNats",
            pkgConfig: "libnats",
            providers: [.apt(["libnats-dev"])]
        ),
        // PortBridge: names across hosts through NATS (docs/DESIGN.md §10),
        // an ordinary client of the local portd through PortCore; it reuses
        // the daemon library's configuration syntax, logging and sd_notify.
        .target(
            name: "PortBridge",
            dependencies: [
                "PortCore", "PortDaemon", "CNats",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(name: "portd-bridge", dependencies: ["PortBridge"]),
        .executableTarget(
            name: "portctl",
            dependencies: [
                "PortCore", "PortActivation", "PortWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Fuzz targets (scripts/fuzz; docs/RELIABILITY.md): in a normal
        // build each replays the inputs named on its command line (its seed
        // corpus in Fuzz/Corpus is replayed by a test); scripts/fuzz builds
        // them with -D FUZZING and -sanitize=fuzzer,address as libFuzzer
        // targets, in .build-fuzz.
        .executableTarget(name: "FuzzWireDecoder", dependencies: ["PortWire", "PortSystem"], path: "Fuzz/WireDecoder"),
        .executableTarget(
            name: "FuzzPortdRequests", dependencies: ["PortDaemon", "PortCore", "PortSystem"], path: "Fuzz/PortdRequests"),
        // Tests mirror the targets above: one test target per layer (each
        // `@testable import`s the layer it tests), portdTests and
        // portctlTests for the executables (their parts, and end to end with
        // the built binaries). PortTestSupport is shared by all of them: the
        // one child-process type, the one harness that runs the real portd
        // and portctl, waits, hex, loop threads.
        .target(
            name: "PortTestSupport",
            dependencies: ["CPortSystem", "PortSystem", "PortWire", "PortRunLoop", "PortNameClient"],
            path: "Tests/PortTestSupport",
            exclude: ["Python"]  // Python peers the tests run (nats-py ones in scripts/ensure-venv's venv)
        ),
        .testTarget(name: "PortSystemTests", dependencies: ["PortSystem", "CPortSystem", "PortWire", "PortTestSupport"]),
        .testTarget(name: "PortWireTests", dependencies: ["PortWire", "PortSystem", "PortTestSupport", "FuzzWireDecoder"]),
        .testTarget(
            name: "PortRunLoopTests",
            dependencies: ["PortRunLoop", "PortSystem", "PortTestSupport", "runloop-main-probe"]
        ),
        // A tiny program the run-loop tests start: it runs PCRunLoop.main on
        // its main thread (Swift Testing runs tests off the main thread).
        .executableTarget(
            name: "runloop-main-probe",
            dependencies: ["PortRunLoop"],
            path: "Tests/RunLoopMainProbe"
        ),
        .testTarget(
            name: "PortMessagingTests",
            dependencies: ["PortMessaging", "PortSystem", "PortWire", "PortRunLoop", "PortTestSupport", "port-accept-probe"],
            exclude: ["Fixtures"]  // Python peers the tests run, not sources
        ),
        // A program the port tests start: it uses up its descriptors
        // (EMFILE) around a replacement of a port's listening socket,
        // which the test process itself cannot do without starving the
        // tests running beside it.
        .executableTarget(
            name: "port-accept-probe",
            dependencies: ["PortMessaging", "PortRunLoop", "PortSystem"],
            path: "Tests/PortAcceptProbe"
        ),
        .testTarget(name: "PortNameProtocolTests", dependencies: ["PortNameProtocol", "PortNameClient", "PortSystem"]),
        // PortCore too: the end-to-end tests use every layer, as a client does.
        .testTarget(name: "PortNameClientTests", dependencies: ["PortNameClient", "PortCore", "PortTestSupport"]),
        // `import PortCore` as a user writes it, beside Foundation.
        .testTarget(name: "PortCoreTests", dependencies: ["PortCore"]),
        .testTarget(
            name: "portdTests",
            dependencies: [
                "PortDaemon", "PortCore", "PortTestSupport", "FuzzPortdRequests",
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Fixtures"]
        ),
        // The NATS test topology of PortTestSupport (a hub with JetStream,
        // a leaf server per host, nats-py peers) proved on its own, for the
        // bridge's tests that stand on it.
        .testTarget(name: "NatsTopologyTests", dependencies: ["PortTestSupport"]),
        .testTarget(
            name: "PortBridgeTests",
            dependencies: ["PortBridge", "PortCore", "PortTestSupport", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "portctlTests",
            dependencies: ["portctl", "PortCore", "PortActivation", "PortWire", "PortTestSupport"],
            exclude: ["Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
