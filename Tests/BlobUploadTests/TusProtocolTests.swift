import BlobStream
@testable import BlobUpload
import Foundation
import Testing

/// The pieces of the tus client that need no server.
@Suite struct TusProtocolTests {
    @Test func metadataIsBase64AndSorted() throws {
        let header = try TusMetadata.encode(["filetype": "video/mp4", "filename": "clip ü.mov", "empty": ""])
        #expect(header == "empty,filename Y2xpcCDDvC5tb3Y=,filetype dmlkZW8vbXA0")
        #expect(TusMetadata.decode(header) == ["filetype": "video/mp4", "filename": "clip ü.mov", "empty": ""])
        #expect(TusMetadata.decode("a YQ==, b, c !!!") == ["a": "a", "b": ""])
    }

    @Test func metadataKeysMustBeSendable() {
        #expect(throws: BlobUploadError.invalidMetadata(key: "two words", reason: "keys must be printable ASCII without spaces or commas")) {
            _ = try TusMetadata.encode(["two words": "x"])
        }
        #expect(throws: BlobUploadError.invalidMetadata(key: "", reason: "keys must not be empty")) {
            _ = try TusMetadata.encode(["": "x"])
        }
    }

    @Test func capabilitiesAreParsedFromOptionsHeaders() {
        let capabilities = TusServerCapabilities(headers: [
            "tus-version": "1.0.0,0.2.2", "tus-extension": "creation, termination,checksum",
            "tus-max-size": "1073741824", "tus-checksum-algorithm": "MD5,sha1",
        ])
        #expect(capabilities == TusServerCapabilities(
            versions: ["1.0.0", "0.2.2"], extensions: ["creation", "termination", "checksum"],
            maxSize: 1_073_741_824, checksumAlgorithms: ["md5", "sha1"]))
    }

    @Test func checksumAlgorithmPrefersSha256ThenSha1ThenMd5() {
        func choice(_ extensions: Set<String>, _ algorithms: [String]) -> ChecksumAlgorithm? {
            TusChecksumPolicy.automatic.algorithm(for: TusServerCapabilities(
                versions: ["1.0.0"], extensions: extensions, maxSize: nil, checksumAlgorithms: algorithms))
        }
        #expect(choice(["checksum"], ["md5", "sha1", "sha256"]) == .sha256)
        #expect(choice(["checksum"], ["md5", "sha1"]) == .sha1)
        #expect(choice(["checksum"], ["crc32", "md5"]) == .md5)
        // Every server with the extension must support sha1.
        #expect(choice(["checksum"], ["blake3"]) == .sha1)
        #expect(choice(["checksum"], []) == .sha1)
        #expect(choice(["creation"], ["sha256"]) == nil)
        #expect(TusChecksumPolicy.disabled.algorithm(for: TusServerCapabilities(
            versions: [], extensions: ["checksum"], maxSize: nil, checksumAlgorithms: ["sha256"])) == nil)
    }

    @Test func backoffGrowsExponentiallyUpToTheCap() {
        var policy = TusRetryPolicy()
        policy.jitter = 0
        #expect((1...7).map(policy.delay(forAttempt:)) == [0.25, 0.5, 1, 2, 4, 8, 8])
        policy.jitter = 0.2
        for attempt in 1...10 {
            let base = min(8, 0.25 * pow(2, Double(attempt - 1)))
            #expect((base * 0.8...base * 1.2).contains(policy.delay(forAttempt: attempt)))
        }
    }

    @Test func onlyPassingFailuresAreRetried() {
        #expect(TusUpload.isTransient(.network(method: "PATCH", url: "u", reason: "reset", code: URLError.Code.networkConnectionLost.rawValue)))
        #expect(TusUpload.isTransient(.network(method: "PATCH", url: "u", reason: "refused", code: URLError.Code.cannotConnectToHost.rawValue)))
        #expect(!TusUpload.isTransient(.network(method: "PATCH", url: "u", reason: "bad", code: URLError.Code.unsupportedURL.rawValue)))
        for status in [409, 423, 429, 460, 500, 502, 503] {
            #expect(TusUpload.isTransient(.httpStatus(method: "PATCH", url: "u", statusCode: status, message: nil)))
        }
        for status in [400, 403, 412, 413, 415] {
            #expect(!TusUpload.isTransient(.httpStatus(method: "PATCH", url: "u", statusCode: status, message: nil)))
        }
        #expect(!TusUpload.isTransient(.cancelled))
        #expect(!TusUpload.isTransient(.uploadGone(url: "u", statusCode: 404)))
    }

    @Test func errorsNameWhatFailedAndWhere() {
        let error = BlobUploadError.retriesExhausted(
            url: "http://h/files/1", offset: 42, attempts: 8,
            lastError: .network(method: "PATCH", url: "http://h/files/1", reason: "reset", code: -1005))
        #expect(error.description == "http://h/files/1: gave up at offset 42 after 8 failed attempts in a row; "
            + "last error: PATCH http://h/files/1: network error: reset")
        let status = BlobUploadError.httpStatus(method: "PUT", url: "http://h/x", statusCode: 405, message: "Not Allowed")
        #expect(status.description.hasPrefix("PUT http://h/x: HTTP 405 "))
        #expect(status.description.hasSuffix(": Not Allowed"))
    }
}
