// swift-tools-version:6.0
// portd: named message ports for Linux. See README.md and shared DESIGN.md.
import PackageDescription

let package = Package(
    name: "portd",
    products: [
        .library(name: "PortCore", targets: ["PortCore"]),
        .executable(name: "portd", targets: ["portd"]),
        .executable(name: "portctl", targets: ["portctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
    ],
    targets: [
        // Kernel interfaces Swift cannot import by itself (function-like macros,
        // GNU extensions). Nothing but thin C; every policy lives in Swift.
        .target(name: "CPortSystem"),
        // libsystemd, linked by portd only.
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        .target(
            name: "PortCore",
            dependencies: [
                "CPortSystem",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .executableTarget(
            name: "portd",
            dependencies: [
                "PortCore", "CSystemd", "CPortSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "portctl",
            dependencies: [
                "PortCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "PortCoreTests",
            dependencies: ["PortCore", "CPortSystem"],
            exclude: ["Fixtures"]  // Python peers the tests run, not sources
        ),
        // Unit tests of portd's parts (@testable import portd) and
        // integration tests that run the built portd and portctl binaries.
        .testTarget(
            name: "PortdTests",
            dependencies: ["PortCore", "CPortSystem", "portd"],
            exclude: ["Fixtures"]
        ),
        // Unit tests of portctl's parts (@testable import portctl), without a daemon.
        .testTarget(
            name: "PortctlTests",
            dependencies: ["PortCore", "portctl"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
