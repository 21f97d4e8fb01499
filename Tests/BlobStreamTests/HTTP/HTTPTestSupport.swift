import BlobStream
import Foundation
import Testing

/// Blobs served by the test nginx, and the way to reach them.
enum HTTPFixture {
    static let nginx = URL(string: "http://127.0.0.1:18080/")!
    static let wwwRoot = "/tmp/blobstream-servers/www"

    /// Fails with what to run when nginx does not answer.
    static func requireNginx() throws {
        let health = nginx.appendingPathComponent("_blobstream/health")
        guard (try? Data(contentsOf: health)).map({ String(decoding: $0, as: UTF8.self).contains("blobstream-nginx") }) == true else {
            throw FixtureError("nginx does not answer at \(nginx): run Scripts/test-servers.sh up (installs nginx from apt)")
        }
    }

    /// Writes `size` pseudo-random bytes (from `seed`) under nginx's root and returns the path
    /// relative to it and the bytes.
    static func makeBlob(size: Int, seed: UInt64 = 1, name: String = "blob") throws -> (path: String, bytes: [UInt8]) {
        try requireNginx()
        let bytes = pattern(size: size, seed: seed)
        let path = "http-tests/\(name)-\(UUID().uuidString).bin"
        try write(bytes, to: path)
        return (path, bytes)
    }

    /// Replaces the file at `path` with `bytes`, atomically, with a modification time `age`
    /// seconds in the past so nginx's entity tag (time and size) changes even within a second.
    static func write(_ bytes: [UInt8], to path: String, age: TimeInterval = 0) throws {
        let file = URL(fileURLWithPath: wwwRoot).appendingPathComponent(path)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: file, options: .atomic)
        if age != 0 {
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -age)], ofItemAtPath: file.path)
        }
    }

    static func url(_ path: String, prefix: String = "") -> URL {
        URL(string: prefix + path, relativeTo: nginx)!.absoluteURL
    }

    /// Fast deterministic bytes (SplitMix64), so a mixed-up offset never matches by chance.
    static func pattern(size: Int, seed: UInt64) -> [UInt8] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15
        var bytes = [UInt8](repeating: 0, count: size)
        bytes.withUnsafeMutableBytes { raw in
            var index = 0
            while index < size {
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                z ^= z >> 31
                withUnsafeBytes(of: z) { word in
                    let run = min(8, size - index)
                    raw.baseAddress!.advanced(by: index).copyMemory(from: word.baseAddress!, byteCount: run)
                }
                index += 8
            }
        }
        return bytes
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Drives a data source through the contract directly, the way a stream does: open, then
/// positional reads that wait for `whenReadable` after `wouldBlock`.
struct SourceReader {
    let source: any BlobDataSource
    /// The longest wait for one callback before the test fails.
    var timeout: TimeInterval = 60

    func open() throws -> Result<BlobSourceDescription, BlobStreamError> {
        let done = DispatchSemaphore(value: 0)
        let box = Box<Result<BlobSourceDescription, BlobStreamError>>()
        source.open { result in
            box.value = result
            done.signal()
        }
        guard done.wait(timeout: .now() + timeout) == .success, let result = box.value else {
            throw FixtureError("open of \(source.resourceName) did not complete within \(timeout) s")
        }
        return result
    }

    /// One read at `offset` that waits through `wouldBlock`.
    func read(at offset: Int64, count: Int) throws -> BlobSourceReadResult {
        var buffer = [UInt8](repeating: 0, count: count)
        return try read(at: offset, into: &buffer)
    }

    func read(at offset: Int64, into buffer: inout [UInt8]) throws -> BlobSourceReadResult {
        while true {
            let signal = DispatchSemaphore(value: 0)
            let result = buffer.withUnsafeMutableBytes { raw in
                source.read(into: raw, at: offset) { signal.signal() }
            }
            guard result == .wouldBlock else { return result }
            guard signal.wait(timeout: .now() + timeout) == .success else {
                throw FixtureError("no whenReadable call within \(timeout) s at offset \(offset) of \(source.resourceName)")
            }
        }
    }

    /// Reads from `offset` to the end with reads of `chunk` bytes, calling `afterRead` (with the
    /// next offset) after each.
    func readToEnd(from offset: Int64 = 0, chunk: Int = 64 * 1024, afterRead: (Int64) throws -> Void = { _ in }) throws -> Result<[UInt8], BlobStreamError> {
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: chunk)
        var position = offset
        while true {
            switch try read(at: position, into: &buffer) {
            case .read(let count):
                output += buffer[0..<count]
                position += Int64(count)
                try afterRead(position)
            case .end:
                return .success(output)
            case .failed(let error):
                return .failure(error)
            case .invalidated:
                return .failure(.sourceFailed(resource: source.resourceName, reason: "unexpected invalidation"))
            case .wouldBlock:
                preconditionFailure("read(at:into:) waits through wouldBlock")
            }
        }
    }
}

final class Box<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T?
    var value: T? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// Runs blocking test code (waits for servers, slow readers) on a thread of its own, so it never
/// holds one of the few cooperative threads that other tests, running in parallel, need.
/// Expectations belong after it, in the test itself: issues recorded on a plain thread are not
/// attributed to the test.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

extension HTTPDataSource.Transport: CustomTestStringConvertible {
    public var testDescription: String { self == .automatic ? "sockets" : "URLSession" }
}
