import BlobStream
import BlobUpload
import Foundation
import Testing

@Suite struct StreamedUploadTests {
    @Test func putsABlobInputStreamByteIdentical() async throws {
        let size = 3 * 1024 * 1024 + 17
        let path = try makeTempFile(size: size)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let name = "put-\(UUID().uuidString).bin"
        let target = Peers.nginx.appendingPathComponent("upload/\(name)")
        let seen = EventLog<UploadProgress>()
        let response = try await StreamedUploader().upload(
            BlobInputStream(fileAtPath: path), to: target, expectedLength: Int64(size)) { seen.append($0) }
        #expect((200..<300).contains(response.statusCode))
        #expect(response.bytesSent == Int64(size))
        let stored = Peers.nginxRoot + "/upload/" + name
        defer { try? FileManager.default.removeItem(atPath: stored) }
        #expect(try sameContents(path, stored))
        #expect(seen.all.last == UploadProgress(completedBytes: Int64(size), totalBytes: Int64(size)))
    }

    @Test func refusesA307ThatWouldResendTheBody() async throws {
        let path = try makeTempFile(size: 256 * 1024)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let target = Peers.nginx.appendingPathComponent("redirect-put/blob.bin")
        await #expect {
            _ = try await StreamedUploader().upload(BlobInputStream(fileAtPath: path), to: target)
        } throws: { error in
            guard case .redirectRefused(let method, let url, let status, let location)? = error as? BlobUploadError else {
                return false
            }
            return method == "PUT" && url == target.absoluteString && status == 307 && location != nil
        }
    }

    @Test func reportsAMissingFileAsASourceError() async throws {
        let target = Peers.nginx.appendingPathComponent("upload/missing-\(UUID().uuidString).bin")
        await #expect(throws: BlobUploadError.source(.notFound(resource: "/nonexistent/blob.bin"))) {
            _ = try await StreamedUploader().upload(BlobInputStream(fileAtPath: "/nonexistent/blob.bin"), to: target)
        }
    }

    @Test func nonSuccessStatusIsATypedError() async throws {
        // nginx allows PUT only under /upload/.
        let target = Peers.nginx.appendingPathComponent("not-writable/blob.bin")
        await #expect {
            _ = try await StreamedUploader().upload(InputStream(data: Data("hello".utf8)), to: target)
        } throws: { error in
            guard case .httpStatus("PUT", target.absoluteString, let status, _)? = error as? BlobUploadError else {
                return false
            }
            return status == 405
        }
    }
}

@Suite struct StreamedUploadCancellationTests {
    @Test func cancellingUnblocksAStalledBodyRead() async throws {
        let name = "stalled-\(UUID().uuidString).bin"
        let target = Peers.nginx.appendingPathComponent("upload/\(name)")
        let upload = Task {
            try await StreamedUploader().upload(
                BlobInputStream(dataSource: StallingDataSource(length: 1 << 20, deliverable: 128 * 1024)), to: target)
        }
        try await Task.sleep(nanoseconds: 300_000_000)
        let started = Date()
        upload.cancel()
        await #expect(throws: BlobUploadError.cancelled) { _ = try await upload.value }
        #expect(Date().timeIntervalSince(started) < 5)
        // URLSession's shared queue is free again: another upload goes through.
        let after = try await StreamedUploader().upload(InputStream(data: Data("ok".utf8)), to: target)
        #expect((200..<300).contains(after.statusCode))
        try? FileManager.default.removeItem(atPath: Peers.nginxRoot + "/upload/" + name)
    }
}
