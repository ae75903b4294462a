// swift-tools-version:6.2
// An example, not part of Courier's build: a download with redirects, traced with swift-otel. See README.md.
import PackageDescription

let package = Package(
    name: "Observability",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Courier", path: "../.."),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0"),
    ],
    targets: [
        .executableTarget(
            name: "ObservedDownload",
            dependencies: [
                .product(name: "Courier", package: "Courier"),
                .product(name: "CourierMockServer", package: "Courier"),
                .product(name: "OTel", package: "swift-otel"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
