import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import Glibc
import SystemCalls
import Testing

/// How the package's own client delimits a streamed body: `Content-Length` when the length is
/// known (S3's presigned PUTs, among others, refuse chunked bodies), chunked when it is not; and
/// in both, the bytes that complete the body for the server (the last byte, the last chunk)
/// leave only after the stream ended cleanly. A stream that fails after yielding every byte
/// leaves the server one byte short.
@Suite struct StreamedPutFramingTests {
    /// An `InputStream` that yields `bytes` and then, instead of its end, fails: what a stream
    /// does whose source turned out to have changed once its last bytes were read.
    final class FailingAfterItsBytes: InputStream {
        private let bytes: [UInt8]
        private var offset = 0
        private var status: Stream.Status = .notOpen
        private var failure: (any Error)?

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
            super.init(data: Data())
        }

        override func open() { status = .open }
        override func close() { status = .closed }
        override var streamStatus: Stream.Status { status }
        override var streamError: (any Error)? { failure }
        override var hasBytesAvailable: Bool { status == .open }
        override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>) -> Bool { false }
        override var delegate: (any StreamDelegate)? { get { nil } set {} }
        override func property(forKey key: Stream.PropertyKey) -> AnyObject? { nil }
        override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool { false }
        override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
        override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}

        override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
            guard offset < bytes.count else {
                status = .error
                failure = BlobStreamError.sourceChanged(resource: "scripted", offset: Int64(offset), reason: "rewritten in place")
                return -1
            }
            let count = min(len, bytes.count - offset)
            bytes.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress! + offset, count: count) }
            offset += count
            return count
        }
    }

    /// A server that records one request's raw bytes until the client closes (or, having read a
    /// `Content-Length` body or the last chunk, answers 201 first).
    final class RecordingServer: Sendable {
        let port: UInt16
        private let received = LockedValue<[UInt8]>([])
        private let done = DispatchSemaphore(value: 0)

        init() throws {
            let (listener, port) = try LoopbackSocket.listening()
            self.port = port
            Thread.detachNewThread { [self] in
                let connection = accept(listener, nil, nil)
                close(listener)
                defer { done.signal() }
                guard connection >= 0 else { return }
                defer { close(connection) }
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                while true {
                    let count = recv(connection, &buffer, buffer.count, 0)
                    guard count > 0 else { return }
                    let all = received.withLock { all in
                        all += buffer.prefix(count)
                        return all
                    }
                    if Self.isComplete(all) {
                        let answer = Array("HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
                        _ = send(connection, answer, answer.count, Int32(MSG_NOSIGNAL))
                        return
                    }
                }
            }
        }

        /// Whether `bytes` hold a whole request: its head and a body as its framing says.
        private static func isComplete(_ bytes: [UInt8]) -> Bool {
            guard let end = bytes.firstRange(of: [13, 10, 13, 10]) else { return false }
            let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).lowercased()
            let body = bytes[end.upperBound...]
            if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
               let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) {
                return body.count >= length
            }
            return body.suffix(5).elementsEqual(Array("0\r\n\r\n".utf8))
        }

        /// The request's head, and its body bytes as they came (framing included).
        func request() -> (head: String, body: [UInt8])? {
            guard done.wait(timeout: .now() + 60) == .success else { return nil }
            let all = received.withLock { $0 }
            guard let end = all.firstRange(of: [13, 10, 13, 10]) else { return nil }
            return (String(decoding: all[..<end.upperBound], as: UTF8.self), Array(all[end.upperBound...]))
        }
    }

    private static let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }

    @Test func aKnownLengthGoesOutAsContentLength() async throws {
        let server = try RecordingServer()
        let url = URL(string: "http://127.0.0.1:\(server.port)/known.bin")!
        let response = try await StreamedUploader().upload(
            InputStream(data: Data(Self.bytes)), to: url, expectedLength: Int64(Self.bytes.count))
        #expect(response.statusCode == 201)
        let request = try #require(server.request())
        #expect(request.head.contains("\r\nContent-Length: \(Self.bytes.count)\r\n"))
        #expect(!request.head.lowercased().contains("transfer-encoding"))
        #expect(request.body == Self.bytes)
    }

    @Test func anUnknownLengthGoesOutChunked() async throws {
        let server = try RecordingServer()
        let url = URL(string: "http://127.0.0.1:\(server.port)/unknown.bin")!
        let response = try await StreamedUploader().upload(InputStream(data: Data(Self.bytes)), to: url)
        #expect(response.statusCode == 201)
        let request = try #require(server.request())
        #expect(request.head.lowercased().contains("\r\ntransfer-encoding: chunked\r\n"))
        #expect(!request.head.lowercased().contains("content-length"))
        #expect(request.body.suffix(5).elementsEqual(Array("0\r\n\r\n".utf8)))
    }

    /// A stream that knows its length once open (a `BlobInputStream` of an HTTP blob, of
    /// unknown length to the caller) is sent with `Content-Length` too.
    @Test func aMeasuredStreamsLengthGoesOutAsContentLength() async throws {
        try TestServers.requireNginx()
        let path = try TempFiles.makeRandomFile(in: TestServers.wwwRoot, prefix: "measured", size: 300_001)
        defer { TempFiles.remove(path) }
        let source = BlobInputStream(dataSource: HTTPDataSource(url: try TestServers.nginxURL(forFileAtPath: path)))
        let server = try RecordingServer()
        let response = try await StreamedUploader().upload(source, to: URL(string: "http://127.0.0.1:\(server.port)/measured.bin")!)
        #expect(response.statusCode == 201)
        let request = try #require(server.request())
        #expect(request.head.contains("\r\nContent-Length: 300001\r\n"), "\(request.head)")
        #expect(!request.head.lowercased().contains("transfer-encoding"))
        #expect(request.body == Array(try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    /// A measured stream positioned past its start declares what it has left, not its blob's
    /// whole length.
    @Test func aSeekedStreamDeclaresWhatItHasLeft() async throws {
        let path = try makeRandomFile(size: 300_000, seed: 213)
        defer { TempFiles.remove(path) }
        let source = BlobInputStream(fileAtPath: path)
        try source.seek(to: 1000)
        let server = try RecordingServer()
        let response = try await StreamedUploader().upload(source, to: URL(string: "http://127.0.0.1:\(server.port)/rest.bin")!)
        #expect(response.statusCode == 201)
        let request = try #require(server.request())
        #expect(request.head.contains("\r\nContent-Length: 299000\r\n"), "\(request.head)")
        #expect(request.body == Array(try Data(contentsOf: URL(fileURLWithPath: path)).dropFirst(1000)))
    }

    /// An empty body goes out as `Content-Length: 0` (the head alone completes it), once the
    /// stream said it ended; one that yields a byte after all fails with nothing sent.
    @Test func anEmptyBodyGoesOutAsContentLengthZeroOnlyAfterItsEnd() async throws {
        let server = try RecordingServer()
        let url = URL(string: "http://127.0.0.1:\(server.port)/empty.bin")!
        let response = try await StreamedUploader().upload(InputStream(data: Data()), to: url, expectedLength: 0)
        #expect(response.statusCode == 201)
        let request = try #require(server.request())
        #expect(request.head.contains("\r\nContent-Length: 0\r\n"), "\(request.head)")
        #expect(!request.head.lowercased().contains("transfer-encoding"))

        let untouched = try RecordingServer()
        let error = await #expect(throws: BlobUploadError.self) {
            _ = try await StreamedUploader().upload(
                InputStream(data: Data([1])), to: URL(string: "http://127.0.0.1:\(untouched.port)/not-empty.bin")!, expectedLength: 0)
        }
        guard case .source(.unexpectedEnd(_, let offset, 0))? = error else {
            Issue.record("expected unexpectedEnd, got \(String(describing: error))")
            return
        }
        #expect(offset == 1)
        #expect(untouched.request()?.head.isEmpty ?? true, "no request reached the server")
    }

    /// Every byte read, then a failure instead of the end: the server gets all but the last
    /// byte of the declared length, or every chunk but the last, and the upload fails.
    @Test(arguments: [true, false]) func aStreamThatFailsAfterItsBytesLeavesTheBodyIncomplete(declaresLength: Bool) async throws {
        let server = try RecordingServer()
        let url = URL(string: "http://127.0.0.1:\(server.port)/failing.bin")!
        await #expect(throws: BlobUploadError.self) {
            _ = try await StreamedUploader().upload(
                FailingAfterItsBytes(Self.bytes), to: url, expectedLength: declaresLength ? Int64(Self.bytes.count) : nil)
        }
        let request = try #require(server.request())
        if declaresLength {
            #expect(request.body == Array(Self.bytes.dropLast()))
        } else {
            #expect(!request.body.suffix(5).elementsEqual(Array("0\r\n\r\n".utf8)))
            #expect(request.body.count >= Self.bytes.count, "every chunk read was sent")
        }
    }
}
