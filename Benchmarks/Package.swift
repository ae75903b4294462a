// swift-tools-version:6.0
// The benchmarks are their own package so that the library's build and CI never depend on async-http-client.
// Each client is its own executable: Courier and FoundationNetworking both declare `URLSession`, and a process
// that links only one client reports only that client's CPU time and memory.
import PackageDescription

let package = Package(
    name: "CourierBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "Courier", path: ".."),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
    ],
    targets: [
        // Scenarios, workload drivers, response checks, statistics and the JSON line each run prints.
        .target(name: "BenchmarkCore"),
        // Rounds, medians and figures of the single-process benchmarks (store-bench, trust-bench).
        .target(name: "MicroBenchSupport", dependencies: [.product(name: "Courier", package: "Courier")]),
        // Courier through its public URLSession API, exactly as a user writes it (`import Courier`).
        .executableTarget(
            name: "courier-bench",
            dependencies: [
                "BenchmarkCore", .product(name: "Courier", package: "Courier"),
                // NIO_GLOBAL_EXECUTOR=1 (see main.swift).
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: [.define("COURIER")]
        ),
        // The same client with an in-memory tracer and metrics backend on its session (`COURIER_TELEMETRY`): what
        // recording every span and metric costs, next to `courier-bench`, which records nothing (no backend).
        .executableTarget(
            name: "courier-telemetry-bench",
            dependencies: [
                "BenchmarkCore", .product(name: "Courier", package: "Courier"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: [.define("COURIER"), .define("COURIER_TELEMETRY")]
        ),
        // The cost of Courier's cache and cookie storage (one process, against CourierMockServer on loopback).
        .executableTarget(
            name: "store-bench",
            dependencies: [
                "MicroBenchSupport", .product(name: "Courier", package: "Courier"),
                .product(name: "CourierMockServer", package: "Courier"),
            ]
        ),
        // What Courier's own server-trust evaluation costs a connection (against CourierMockServer on loopback).
        .executableTarget(
            name: "trust-bench",
            dependencies: [
                "MicroBenchSupport", .product(name: "Courier", package: "Courier"),
                .product(name: "CourierMockServer", package: "Courier"),
            ]
        ),
        // The toolchain's libcurl-based URLSession (`import FoundationNetworking`).
        .executableTarget(name: "foundation-bench", dependencies: ["BenchmarkCore"]),
        // async-http-client 1.37 with its async/await API.
        .executableTarget(
            name: "ahc-bench",
            dependencies: [
                "BenchmarkCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
