// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "BlobStream",
    products: [
        .library(name: "BlobStream", targets: ["BlobStream", "BlobTransport"]),
        .library(name: "BlobUpload", targets: ["BlobUpload"]),
        .executable(name: "blobstream", targets: ["blobstream"]),
        .executable(name: "blob-bench", targets: ["blob-bench"]),
    ],
    targets: [
        // CPU intrinsics (SSE4.2 crc32, PCLMULQDQ, SHA-NI) behind function-level target
        // attributes, so the package needs no unsafe flags and runs on any x86-64 or other CPU.
        .target(name: "CBlobStreamIntrinsics"),
        // TLS sessions from the system's OpenSSL 3 (libssl-dev on Debian), for https: on the
        // package's own client; Linux only (elsewhere https: stays on URLSession).
        .target(
            name: "CBlobStreamTLS",
            linkerSettings: [.linkedLibrary("ssl", .when(platforms: [.linux])), .linkedLibrary("crypto", .when(platforms: [.linux]))]
        ),
        // The one HTTP/1.1 client of the package (connection, head writer and parser, body
        // decoder); internal: no product, and its types are `package`, never public.
        .target(name: "HTTP1", dependencies: ["SystemCalls", "CBlobStreamTLS"]),
        // The package's one layer of system calls (descriptors, pipes, sockets, paths), retried
        // on EINTR in one place; internal like HTTP1.
        .target(name: "SystemCalls"),
        // The choice of client shared by the HTTP source and the upload clients (`Transport`,
        // `TLSTrust`, `MinimumSpeed`) and the adapters between URLSession's types and HTTP1's;
        // re-exported by BlobStream.
        .target(name: "BlobTransport", dependencies: ["HTTP1", "SystemCalls"]),
        .target(name: "BlobStream", dependencies: ["BlobTransport", "CBlobStreamIntrinsics", "HTTP1", "SystemCalls"]),
        .target(name: "BlobUpload", dependencies: ["BlobStream", "HTTP1", "SystemCalls"]),
        .executableTarget(name: "blobstream", dependencies: ["BlobStream", "BlobUpload", "HTTP1", "SystemCalls"]),
        .executableTarget(
            name: "blob-bench",
            dependencies: ["BlobStream", "BlobUpload", "HTTP1", "SystemCalls"],
            path: "Benchmarks/blob-bench"
        ),
        // Helpers shared by the test targets: server discovery, a fault-injecting TCP proxy,
        // in-memory sources.
        .target(name: "BlobTestSupport", dependencies: ["BlobStream", "SystemCalls"], path: "Tests/BlobTestSupport"),
        // A child program for a test whose subject traps inside Foundation.
        .executableTarget(name: "property-list-probe", dependencies: ["BlobStream"], path: "Tests/PropertyListProbe"),
        .testTarget(
            name: "BlobStreamTests",
            dependencies: ["BlobStream", "HTTP1", "SystemCalls", "BlobTestSupport", "property-list-probe"]
        ),
        .testTarget(name: "BlobUploadTests", dependencies: ["BlobStream", "BlobUpload", "HTTP1", "SystemCalls", "BlobTestSupport"]),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1", "SystemCalls"]),
        .testTarget(name: "SystemCallsTests", dependencies: ["SystemCalls"]),
    ],
    swiftLanguageModes: [.v6]
)
