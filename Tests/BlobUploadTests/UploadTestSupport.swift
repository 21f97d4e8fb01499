import BlobStream
import BlobUpload
import Foundation
import Synchronization
import Testing

/// The servers the upload tests talk to.
enum Peers {
    private static let environment = ProcessInfo.processInfo.environment
    static let nginx = URL(string: environment["BLOBUPLOAD_NGINX"] ?? "http://127.0.0.1:18080/")!
    static let nginxRoot = environment["BLOBUPLOAD_NGINX_ROOT"] ?? "/tmp/blobstream-servers/www"
    static let tus = URL(string: environment["BLOBUPLOAD_TUS"] ?? "http://127.0.0.1:18090/files/")!
    static let tusChecksum = URL(string: environment["BLOBUPLOAD_TUS_CHECKSUM"] ?? "http://127.0.0.1:18091/files/")!
    static let tusData = environment["BLOBUPLOAD_TUS_DATA"] ?? "/tmp/blobstream-servers/tus-data"
}

/// A file of `size` pseudo-random bytes (the same for the same seed), removed by the caller.
func makeTempFile(size: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) throws -> String {
    let path = NSTemporaryDirectory() + "blobupload-\(UUID().uuidString).bin"
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    var state = seed
    var remaining = size
    let block = 1 << 20
    var words = [UInt64](repeating: 0, count: block / 8)
    while remaining > 0 {
        for index in words.indices {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            words[index] = state
        }
        let count = min(block, remaining)
        try words.withUnsafeBytes { try handle.write(contentsOf: Data($0.prefix(count))) }
        remaining -= count
    }
    return path
}

/// Whether two files have the same bytes; compares them in 1 MiB blocks.
func sameContents(_ first: String, _ second: String) throws -> Bool {
    let a = try FileHandle(forReadingFrom: URL(fileURLWithPath: first))
    let b = try FileHandle(forReadingFrom: URL(fileURLWithPath: second))
    defer {
        try? a.close()
        try? b.close()
    }
    while true {
        let left = try a.read(upToCount: 1 << 20) ?? Data()
        let right = try b.read(upToCount: 1 << 20) ?? Data()
        if left != right { return false }
        if left.isEmpty { return true }
    }
}

/// The file in which the tus server keeps the upload at `url`.
func tusStoredFile(_ url: URL) -> String {
    Peers.tusData + "/" + url.lastPathComponent
}

/// Collects events from any thread.
final class EventLog<Event: Sendable>: Sendable {
    private let events = Mutex<[Event]>([])
    func append(_ event: Event) { events.withLock { $0.append(event) } }
    var all: [Event] { events.withLock { $0 } }
}

/// A blob of `length` zero bytes that delivers `deliverable` of them and then has no more
/// "yet", forever: a peer that stalls. `close()` drops the pending callback.
final class StallingDataSource: BlobDataSource {
    let length: Int64
    let deliverable: Int64
    private let pending = Mutex<(@Sendable () -> Void)?>(nil)

    init(length: Int64, deliverable: Int64) {
        self.length = length
        self.deliverable = deliverable
    }

    var resourceName: String { "stalling-source" }

    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        completion(.success(BlobSourceDescription(length: length, identity: "stall")))
    }

    func read(
        into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        guard offset < deliverable else {
            pending.withLock { $0 = whenReadable }
            return .wouldBlock
        }
        let count = Int(min(Int64(buffer.count), deliverable - offset))
        buffer.baseAddress!.initializeMemory(as: UInt8.self, repeating: 0, count: count)
        return .read(count)
    }

    func close() {
        pending.withLock { $0 = nil }
    }
}
