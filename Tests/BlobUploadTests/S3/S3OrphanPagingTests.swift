import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// `ListMultipartUploads` pages and uploads of different ages, from a scripted S3 (moto 5.2
/// ignores `max-uploads` and dates every upload alike).
@Suite struct S3OrphanPagingTests {
    static func page(
        _ uploads: [(key: String, id: String, initiated: String)], next: (String, String)?, truncated: Bool? = nil
    ) -> String {
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListMultipartUploadsResult><Bucket>scripted-bucket</Bucket>"
        xml += "<IsTruncated>\(truncated ?? (next != nil))</IsTruncated>"
        if let next { xml += "<NextKeyMarker>\(next.0)</NextKeyMarker><NextUploadIdMarker>\(next.1)</NextUploadIdMarker>" }
        for upload in uploads {
            xml += "<Upload><Key>\(upload.key)</Key><UploadId>\(upload.id)</UploadId><Initiated>\(upload.initiated)</Initiated></Upload>"
        }
        return S3ErrorTests.answer("200 OK", fields: ["Content-Type: application/xml"], body: xml + "</ListMultipartUploadsResult>")
    }

    static let firstPage = page(
        [("a/1", "U1", "2020-01-01T00:00:00.000Z"), ("a/2", "U2", "2030-01-01T00:00:00Z")], next: ("a/2", "U2"))
    static let lastPage = page([("a/3", "U3", "2021-06-30T12:00:00.500Z")], next: nil)

    @Test func followsTheMarkersToTheLastPage() async throws {
        let server = try ScriptedHTTPServer(connections: [[Self.firstPage], [Self.lastPage]])
        defer { server.stop() }

        let uploads = try await S3ErrorTests.client(server).listUnfinishedUploads(prefix: "a/", pageSize: 2)

        #expect(uploads.map(\.uploadID) == ["U1", "U2", "U3"])
        #expect(uploads.map(\.key) == ["a/1", "a/2", "a/3"])
        #expect(uploads[2].initiated == Date(timeIntervalSince1970: 1_625_054_400.5))
        let requests = server.requests
        try #require(requests.count == 2)
        #expect(requests[0].hasPrefix("GET /scripted-bucket/?max-uploads=2&prefix=a%2F&uploads= HTTP/1.1"), "\(requests[0])")
        #expect(requests[1].hasPrefix(
            "GET /scripted-bucket/?key-marker=a%2F2&max-uploads=2&prefix=a%2F&upload-id-marker=U2&uploads= HTTP/1.1"), "\(requests[1])")
    }

    @Test func abortsTheOlderUploadsOfEveryPage() async throws {
        let deleted = S3ErrorTests.answer("204 No Content")
        let server = try ScriptedHTTPServer(connections: [[Self.firstPage], [Self.lastPage], [deleted], [deleted]])
        defer { server.stop() }

        let cutoff = try #require(S3Client.parseTimestamp("2026-01-01T00:00:00Z"))
        let aborted = try await S3ErrorTests.client(server).abortUnfinishedUploads(prefix: "a/", initiatedBefore: cutoff)

        #expect(aborted.map(\.uploadID) == ["U1", "U3"])
        let requests = server.requests
        try #require(requests.count == 4)
        #expect(requests[2].hasPrefix("DELETE /scripted-bucket/a/1?uploadId=U1 HTTP/1.1"), "\(requests[2])")
        #expect(requests[3].hasPrefix("DELETE /scripted-bucket/a/3?uploadId=U3 HTTP/1.1"), "\(requests[3])")
    }

    @Test(arguments: [
        page([("a/1", "U1", "2020-01-01T00:00:00Z")], next: nil, truncated: true),
        page([("a/1", "U1", "2020-01-01T00:00:00Z")], next: ("", "U1")),
    ])
    func aTruncatedPageWithoutANextOneIsAProtocolViolation(answer: String) async throws {
        let server = try ScriptedHTTPServer(connections: [[answer]])
        defer { server.stop() }
        await #expect {
            _ = try await S3ErrorTests.client(server).listUnfinishedUploads()
        } throws: { error in
            guard case S3Error.protocolViolation(_, _, "ListMultipartUploads", let reason) = error else { return false }
            return reason.contains("next page")
        }
    }

    @Test func aPageThatNamesItselfAgainEndsTheListing() async throws {
        let again = Self.page([("a/2", "U2", "2020-01-01T00:00:00Z")], next: ("a/2", "U2"))
        let server = try ScriptedHTTPServer(connections: [[again], [again], [again]])
        defer { server.stop() }
        await #expect {
            _ = try await S3ErrorTests.client(server).listUnfinishedUploads()
        } throws: { error in
            guard case S3Error.protocolViolation(_, _, _, let reason) = error else { return false }
            return reason.contains("the same one again")
        }
        #expect(server.requests.count == 2)
    }

    @Test func anUploadWithoutAStartTimeIsAProtocolViolation() async throws {
        let server = try ScriptedHTTPServer(connections: [[Self.page([("a/1", "U1", "yesterday")], next: nil)]])
        defer { server.stop() }
        await #expect {
            _ = try await S3ErrorTests.client(server).listUnfinishedUploads()
        } throws: { error in
            guard case S3Error.protocolViolation(_, "a/1", _, _) = error else { return false }
            return true
        }
    }
}
