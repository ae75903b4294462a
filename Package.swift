// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Courier",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "Courier", targets: ["Courier"]),
        .library(name: "CourierMockServer", targets: ["CourierMockServer"]),
        .library(name: "CourierManager", targets: ["CourierManager"]),
        .executable(name: "courier", targets: ["courier"]),
        .executable(name: "courierd", targets: ["courierd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // Telemetry: spans (with context propagation) and metrics, inert until the app bootstraps a backend.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        // SQLite for the disk cache and the cookie jar (Debian: libsqlite3-dev).
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
    ],
    targets: [
        // zlib from the system (Debian: zlib1g-dev), for streaming gzip/deflate decoding under our own control.
        .systemLibrary(name: "CCourierZlib", path: "Sources/CCourierZlib"),
        // Brotli from the system (Debian: libbrotli-dev), for `Content-Encoding: br`. The decoder alone for the
        // library; the encoder is a module of its own, linked only by the mock server, which compresses test bodies.
        .systemLibrary(
            name: "CCourierBrotli",
            path: "Sources/CCourierBrotli",
            pkgConfig: "libbrotlidec",
            providers: [.apt(["libbrotli-dev"])]
        ),
        .systemLibrary(
            name: "CCourierBrotliEncoder",
            path: "Sources/CCourierBrotliEncoder",
            pkgConfig: "libbrotlienc",
            providers: [.apt(["libbrotli-dev"])]
        ),
        .target(
            name: "CourierHTTP",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            // The Public Suffix List (MPL 2.0), used when the system has no copy (Debian: publicsuffix).
            resources: [.copy("Cookies/public_suffix_list.dat")]
        ),
        .target(
            name: "CourierTransport",
            dependencies: [
                "CourierHTTP",
                "CCourierZlib",
                "CCourierBrotli",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CourierStore",
            dependencies: [
                "CourierHTTP",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "Courier",
            dependencies: [
                "CourierHTTP",
                "CourierTransport",
                "CourierStore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            exclude: ["Engine/README.md"]
        ),
        // AFURLSessionManager and AFHTTPSessionManager on Courier's public API only (it must also compile against
        // Apple's Foundation with the import changed).
        .target(name: "CourierManager", dependencies: ["Courier"]),
        .target(
            name: "CourierMockServer",
            dependencies: [
                "CCourierZlib",
                "CCourierBrotliEncoder",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // The background-transfer daemon: runs background sessions' tasks with Courier's own engine, out of the app.
        .target(
            name: "CourierDaemon",
            dependencies: [
                "Courier", "CourierHTTP", "CourierStore",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(name: "courierd", dependencies: ["CourierDaemon"]),
        .executableTarget(
            name: "courier",
            dependencies: [
                "Courier",
                // ResumeData (reading -C -'s record) and PrivateFolder (writing it), as the library does.
                "CourierHTTP",
                "CourierStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // --pin: the SHA-256 of the server certificate's SubjectPublicKeyInfo.
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "CourierHTTPTests", dependencies: ["CourierHTTP"],
            // The Public Suffix List's own test cases (public domain).
            resources: [.copy("Resources/test_psl.txt")]
        ),
        .testTarget(
            name: "CourierTransportTests",
            dependencies: [
                "CourierTransport", "CourierMockServer",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        // Certificates made for tests, shared by the test targets (not a product).
        .target(
            name: "CourierTestSupport",
            dependencies: [
                "Courier", "CourierMockServer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Tests/CourierTestSupport"
        ),
        .testTarget(
            name: "CourierTests",
            dependencies: [
                "Courier", "CourierHTTP", "CourierTransport", "CourierStore", "CourierMockServer", "courier",
                "CourierTestSupport", "CourierDaemon", "courierd",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "CourierManagerTests",
            dependencies: ["CourierManager", "Courier", "CourierMockServer", "CourierTestSupport"]
        ),
        .testTarget(
            name: "CourierMockServerTests",
            dependencies: [
                "CourierMockServer", "CourierTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
