// swift-tools-version:6.0
// portd benchmarks: the PortCore side of scripts/bench (docs/BENCHMARKS.md).
// A package of its own, so that `swift test` of the root package never builds
// it; it depends on the root package by path and builds in release only:
//   swift build -c release --package-path Benchmarks
// No benchmark framework: plain CLOCK_MONOTONIC loops keep the build cheap.
import PackageDescription

let package = Package(
    name: "portd-benchmarks",
    dependencies: [
        // `name:` pins the identity to the root package's name, whatever the
        // directory of the checkout is called (a path dependency's identity is
        // otherwise its folder name).
        .package(name: "portd", path: ".."),
    ],
    targets: [
        // Linux calls Swift's Glibc module does not export (eventfd, CPU
        // affinity); nothing else.
        .target(name: "CBenchSupport"),
        .executableTarget(
            name: "portcore-bench",
            dependencies: [
                "CBenchSupport",
                .product(name: "PortCore", package: "portd"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
