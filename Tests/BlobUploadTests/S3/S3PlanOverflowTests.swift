@testable import BlobUpload
import Foundation
import Testing

/// A source may claim a length near `Int64.max` (an HTTP server's `Content-Length` is its to
/// choose): the part planner says it is too large for S3, never traps on an overflow.
@Suite struct S3PlanOverflowTests {
    @Test(arguments: [Int64.max, Int64.max - 10, Int64.max - (5 << 20) + 2])
    func aHugeLengthIsTooLargeForS3(length: Int64) {
        #expect(throws: S3Error.sourceTooLarge(source: "huge", length: length)) {
            try S3UploadRun.partSize(for: length, source: "huge", options: S3UploadOptions())
        }
    }

    /// The largest blob S3 takes (10,000 parts of 5 GiB) is planned in 10,000 parts: the
    /// overflow-safe rounding up is still a rounding up.
    @Test func theLargestBlobFitsExactly() throws {
        let largest = Int64(S3UploadOptions.maximumPartCount) * Int64(S3UploadOptions.maximumPartSize)
        #expect(try S3UploadRun.partSize(for: largest, source: "s", options: S3UploadOptions()) == S3UploadOptions.maximumPartSize)
        #expect(throws: S3Error.sourceTooLarge(source: "s", length: largest + 1)) {
            try S3UploadRun.partSize(for: largest + 1, source: "s", options: S3UploadOptions())
        }
    }
}
