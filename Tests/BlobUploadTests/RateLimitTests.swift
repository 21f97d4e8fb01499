import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import Glibc
import Testing

/// `--limit-rate` and ``RateLimit``: the rate a server sees, measured where the bytes arrive.
@Suite struct RateLimitTests {
    /// `blobstream put --limit-rate 512K` of 10 MiB to a loopback server that timestamps every
    /// read: over every 5 s window of the ~20 s upload the average is within 5 % of the limit.
    @Test func putHoldsTheLimitOverEveryFiveSecondWindow() async throws {
        let rate = 512 * 1024
        let size = 10 << 20
        let path = try makeRandomFile(size: size, seed: 81)
        defer { TempFiles.remove(path) }
        let receiver = try TimedBodyReceiver()
        defer { receiver.stop() }

        let result = try await ToolProcess.execute(
            ToolProcess.blobstream(), ["put", "--limit-rate", "512K", path, "http://127.0.0.1:\(receiver.port)/paced"])

        #expect(result.status == 0, "\(result.standardError)")
        let samples = receiver.samples
        let total = samples.last?.bytes ?? 0
        #expect(total >= size, "the whole body arrived")
        let end = try #require(samples.last).seconds
        #expect(end > 18, "10 MiB at 512 KiB/s takes about 20 s, not \(end) s")
        // Every window of 5 s that starts at a read and ends within the transfer.
        var worst = 0.0
        for start in samples where start.seconds + 5 <= end {
            let before = start.bytes
            let after = samples.last { $0.seconds <= start.seconds + 5 }?.bytes ?? before
            let average = Double(after - before) / 5
            worst = max(worst, abs(average - Double(rate)) / Double(rate))
        }
        #expect(worst <= 0.05, "a 5 s window averaged \(Int(worst * 100)) % off the limit (\(Self.profile(samples)))")
    }

    /// The bytes received in each second, for a failure's message.
    static func profile(_ samples: [TimedBodyReceiver.Sample]) -> String {
        var perSecond: [Int: Int] = [:]
        var before = 0
        for sample in samples {
            perSecond[Int(sample.seconds), default: 0] += sample.bytes - before
            before = sample.bytes
        }
        return perSecond.keys.sorted().map { "\($0)s:\(perSecond[$0]! / 1024)K" }.joined(separator: " ")
    }

    /// Concurrent senders share one limit: their reservations are taken in turn.
    @Test func reservationsAreTakenInTurn() throws {
        let limit = try #require(RateLimit(bytesPerSecond: 1 << 20))
        let slice = limit.sliceSize
        #expect(slice == (1 << 20) / 20)
        let waits = (0..<21).map { _ in limit.reserve(slice) }
        // The first slices go at once (the credit); the 21st waits for about a second's worth.
        #expect(waits[0] == 0)
        #expect(waits == waits.sorted())
        #expect((0.8e9...1.2e9).contains(Double(waits[20])), "\(waits[20]) ns")
    }

    @Test func noLimitAtOrBelowZero() {
        #expect(RateLimit(bytesPerSecond: 0) == nil)
        #expect(RateLimit(bytesPerSecond: -1) == nil)
    }

    @Test(arguments: ["0", "-5", "abc", "1X", "", "1.5M", "99999999999G"])
    func unusableRatesAreUsageErrors(rate: String) async throws {
        for command in [["put", "/etc/hostname", "http://127.0.0.1:9/x"], ["cat", "http://127.0.0.1:9/x"],
                        ["upload", "/etc/hostname", "http://127.0.0.1:9/files/"],
                        ["s3", "cp", "--endpoint", "http://127.0.0.1:9", "/etc/hostname", "s3://bucket/key"]] {
            let result = try await ToolProcess.execute(
                ToolProcess.blobstream(), command + ["--limit-rate", rate],
                environment: ["AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"])
            #expect(result.status == 64, "\(command[0]) --limit-rate '\(rate)': \(result.standardError)")
            #expect(result.standardError.contains("--limit-rate"))
        }
    }
}

/// A loopback server for one streamed request: reads it to the end of its chunked body,
/// noting when each read's bytes reached the socket (the kernel's receive time, so a test
/// process too busy to read at once does not shift the measurement) and how many bytes had come
/// by then, and answers 201.
final class TimedBodyReceiver: @unchecked Sendable {
    struct Sample: Sendable {
        var seconds: Double
        var bytes: Int
    }

    let port: UInt16
    private let listener: Int32
    private let lock = NSLock()
    private var recorded: [Sample] = []

    init() throws {
        (listener, port) = try LoopbackSocket.listening()
        Thread { [self] in serve() }.start()
    }

    /// The reads of the body, from its first byte (bytes counted after the request head).
    var samples: [Sample] { lock.withLock { recorded } }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    /// `SO_TIMESTAMPNS` (Linux): each read carries the time its last packet arrived.
    private static let timestampOption: Int32 = 35

    private func serve() {
        let connection = accept(listener, nil, nil)
        close(listener)
        guard connection >= 0 else { return }
        defer { close(connection) }
        var on: Int32 = 1
        setsockopt(connection, SOL_SOCKET, Self.timestampOption, &on, socklen_t(MemoryLayout<Int32>.size))
        var headEnded = false
        var window: [UInt8] = []
        var bodyBytes = 0
        var declaredLength: Int?
        var start: Double = 0
        while true {
            // Small reads: each one's time is that of few packets.
            guard let (chunk, arrived) = Self.receive(connection, count: 16 << 10) else { return }
            var body = ArraySlice(chunk)
            if !headEnded {
                window += chunk
                guard let end = Self.find([13, 10, 13, 10], in: window) else { continue }
                headEnded = true
                let head = String(decoding: window[..<end], as: UTF8.self).lowercased()
                declaredLength = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
                body = ArraySlice(window[(end + 4)...])
                start = arrived
            }
            bodyBytes += body.count
            window = Array((window + body).suffix(7))
            lock.withLock { recorded.append(Sample(seconds: arrived - start, bytes: bodyBytes)) }
            if let declaredLength {
                if bodyBytes >= declaredLength { break }
            } else if window.suffix(7) == [13, 10, 48, 13, 10, 13, 10] {
                // The last chunk of the chunked coding (random data holds it with odds of 2^-56).
                break
            }
        }
        let answer = Array("HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
        _ = send(connection, answer, answer.count, Int32(MSG_NOSIGNAL))
    }

    /// Up to `count` bytes and the kernel's receive time (seconds, realtime clock); `nil` at
    /// the end or on an error.
    private static func receive(_ fd: Int32, count: Int) -> ([UInt8], Double)? {
        var bytes = [UInt8](repeating: 0, count: count)
        var control = [UInt8](repeating: 0, count: 128)
        let received = bytes.withUnsafeMutableBytes { buffer in
            control.withUnsafeMutableBytes { controlBuffer in
                var vector = iovec(iov_base: buffer.baseAddress, iov_len: count)
                return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    var message = msghdr()
                    message.msg_iov = vectorPointer
                    message.msg_iovlen = 1
                    message.msg_control = controlBuffer.baseAddress
                    message.msg_controllen = controlBuffer.count
                    let result = recvmsg(fd, &message, 0)
                    return (result, message.msg_controllen)
                }
            }
        }
        guard received.0 > 0 else { return nil }
        // One cmsghdr (length, level, type: 16 bytes on 64-bit Linux) and its timespec.
        var arrived = Date().timeIntervalSince1970
        if received.1 >= 32 {
            control.withUnsafeBytes { raw in
                let type = raw.load(fromByteOffset: 12, as: Int32.self)
                if type == timestampOption {
                    let seconds = raw.load(fromByteOffset: 16, as: Int.self)
                    let nanoseconds = raw.load(fromByteOffset: 24, as: Int.self)
                    arrived = Double(seconds) + Double(nanoseconds) / 1e9
                }
            }
        }
        return (Array(bytes[0..<received.0]), arrived)
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }
}

/// The limit on the API's clients: a lower bound on the time only (speed targets live in
/// blob-bench; the exact rate is measured by ``RateLimitTests``).
@Suite struct ClientRateLimitTests {
    @Test func aTusUploadTakesAtLeastItsShareOfTime() async throws {
        try TestServers.requireTus()
        let size = 3 << 20
        let path = try makeRandomFile(size: size, seed: 111)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.tusFilesURL, rateLimit: RateLimit(bytesPerSecond: 2 << 20))
        var options = TusUploadOptions()
        options.chunkSize = 1 << 20
        let start = Date()
        let result = try await client.upload(.file(path: path), options: options)
        // 3 MiB at 2 MiB/s: 1.5 s, less the limit's credit (three slices, 0.15 s).
        #expect(Date().timeIntervalSince(start) >= 1.3)
        #expect(try tusStoredCopyMatches(result.uploadURL, file: path))
        try await client.terminate(result.uploadURL)
    }

    /// A limit below the minimum speed does not fail the upload: the waits it asks for are not
    /// time spent on the network. Chunks of a file stream as they are read (all but the last);
    /// their pauses were counted against the minimum, and every such PATCH failed as too slow.
    @Test func aLimitBelowTheMinimumSpeedDoesNotFailStreamedChunks() async throws {
        try TestServers.requireTus()
        let size = 200_000
        let path = try makeRandomFile(size: size, seed: 112)
        defer { TempFiles.remove(path) }
        let client = TusClient(
            endpoint: TestServers.tusFilesURL, minimumSpeed: MinimumSpeed(bytesPerSecond: 100_000, seconds: 1),
            rateLimit: RateLimit(bytesPerSecond: 60_000))
        var options = TusUploadOptions()
        options.chunkSize = 64 * 1024
        options.retry.maxAttempts = 1
        let result = try await client.upload(.file(path: path), options: options)
        #expect(try tusStoredCopyMatches(result.uploadURL, file: path))
        try await client.terminate(result.uploadURL)
    }

    @Test func anS3UploadSharesTheLimitAcrossItsParts() async throws {
        let (plain, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        var configuration = plain.configuration
        configuration.rateLimit = RateLimit(bytesPerSecond: 8 << 20)
        let client = try S3Client(configuration: configuration)
        let size = 3 * (5 << 20)
        let path = try makeRandomFile(size: size, seed: 112)
        defer { TempFiles.remove(path) }
        var options = S3UploadOptions()
        options.partSize = 5 << 20
        options.parallelParts = 3
        let start = Date()
        _ = try await client.upload(.file(path: path), key: "limited.bin", options: options)
        // 15 MiB at 8 MiB/s, three parts at once sharing it: 1.875 s, less the credit (0.15 s).
        #expect(Date().timeIntervalSince(start) >= 1.7)
        #expect(try MotoS3.sha256(bucket: bucket, key: "limited.bin") == TempFiles.sha256(ofFileAtPath: path))
    }
}
