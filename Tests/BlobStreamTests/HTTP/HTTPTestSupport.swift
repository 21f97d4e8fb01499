import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// A blob in a fresh directory under nginx's root; call ``remove()`` when done.
struct ServedBlob: Sendable {
    /// The directory that holds it, under ``TestServers/wwwRoot``.
    let directory: String
    /// Its file.
    let path: String
    /// Its bytes.
    let bytes: [UInt8]

    /// Writes `size` pseudo-random bytes for `seed` to a new directory served by nginx.
    init(size: Int, seed: UInt64 = 1) throws {
        try TestServers.requireNginx()
        let directory = try TempFiles.makeDirectory(in: TestServers.wwwRoot, prefix: "http-source")
        let path = directory + "/blob.bin"
        let bytes = TempFiles.pseudoRandomBytes(count: size, seed: seed)
        try TempFiles.removing(directory) { try Data(bytes).write(to: URL(fileURLWithPath: path)) }
        (self.directory, self.path, self.bytes) = (directory, path, bytes)
    }

    /// Where nginx serves it through `route`.
    func url(_ route: TestServers.Route = .plain) throws -> URL {
        try TestServers.nginxURL(forFileAtPath: path, route: route)
    }

    /// Replaces it, atomically, with `bytes` dated an hour back, so nginx's entity tag (time and
    /// size) changes even within the same second.
    func replace(with bytes: [UInt8]) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: path)
    }

    func remove() {
        TempFiles.remove(directory)
    }
}

/// Drives a data source through the contract directly, the way a stream does: open, then
/// positional reads that wait for `whenReadable` after `wouldBlock`.
struct SourceReader {
    let source: any BlobDataSource
    /// The longest wait for one callback before the test fails.
    var timeout: TimeInterval = 60

    /// Opens the source for a first read at `offset`.
    func open(at offset: Int64 = 0) throws -> Result<BlobSourceDescription, BlobStreamError> {
        let done = DispatchSemaphore(value: 0)
        let box = Locked<Result<BlobSourceDescription, BlobStreamError>?>(nil)
        source.open(at: offset) { result in
            box.value = result
            done.signal()
        }
        guard done.wait(timeout: .now() + timeout) == .success, let result = box.value else {
            throw TestSupportError("open of \(source.resourceName) did not complete within \(timeout) s")
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
                throw TestSupportError("no whenReadable call within \(timeout) s at offset \(offset) of \(source.resourceName)")
            }
        }
    }

    /// Reads from 0 in reads of 16 KiB until an answer is not bytes: what was delivered, and
    /// that answer.
    func readUntilStopped() throws -> (delivered: [UInt8], outcome: BlobSourceReadResult) {
        var delivered: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let outcome = try read(at: Int64(delivered.count), into: &buffer)
            guard case .read(let count) = outcome else { return (delivered, outcome) }
            delivered += buffer[0..<count]
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
