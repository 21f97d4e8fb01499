import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// The HTTP source's minimum speed (``HTTPDataSource/Configuration/minimumSpeed``): a body
/// that trickles, which the idle time-out never ends since every byte restarts it, fails with a
/// time-out naming the URL, the offset and the rate, and the source resumes from where it
/// stopped as after any time-out; a slow but steady body above the minimum is read whole.
@Suite struct HTTPMinimumSpeedTests {
    static let bytes = TempFiles.pseudoRandomBytes(count: 2000, seed: 19)
    static let transports: [HTTPDataSource.Transport] = [.automatic, .urlSession]

    /// A 206 for the request's range of ``bytes``, pinned by an entity tag.
    static func answer(_ request: ScriptedHTTPServer.Request) -> [UInt8] {
        let spec = (request.fields["range"] ?? "").dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
        let first = min(Int(spec.first ?? "") ?? 0, bytes.count - 1)
        let last = min(spec.count > 1 ? Int(spec[1]) ?? bytes.count - 1 : bytes.count - 1, bytes.count - 1)
        return ScriptedHTTPServer.response(
            status: "206 Partial Content", fields: ["Content-Range": "bytes \(first)-\(last)/\(bytes.count)", "ETag": "\"v1\""],
            body: Array(bytes[first...last]))
    }

    static func configuration(maxRetries: Int, transport: HTTPDataSource.Transport, window: Double = 1) -> HTTPDataSource.Configuration {
        .init(minimumSpeed: MinimumSpeed(bytesPerSecond: 100, seconds: window), maxRetries: maxRetries, retryDelay: 0.01, transport: transport)
    }

    /// One byte every 0.1 s (10 bytes/s) against a minimum of 100 bytes/s over 1 s: a time-out
    /// after about a second, not after the 4 s the server trickles before it closes.
    @Test(arguments: transports)
    func aBodyBelowTheMinimumSpeedTimesOutNamingTheRate(transport: HTTPDataSource.Transport) async throws {
        let server = try ScriptedHTTPServer(pacing: .init(after: 150, bytes: 1, interval: 0.1, steps: 40), respond: Self.answer)
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/trickle")!
        let result = try await blocking {
            let source = HTTPDataSource(url: url, configuration: Self.configuration(maxRetries: 1, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            return try reader.readToEnd()
        }
        guard case .failure(.timedOut(let resource, let operation, _)) = result else {
            Issue.record("expected a time-out, got \(result.map(\.count))")
            return
        }
        #expect(resource == url.absoluteString)
        #expect(operation.contains("bytes/s") && operation.contains("below the minimum of 100 bytes/s"), "\(operation)")
        #expect(operation.contains("at offset"), "\(operation)")
        // The time-out is retried like any other, from where the body stopped.
        #expect(server.parsedRequests.count == 2, "\(server.parsedRequests.map(\.fields))")
        let resumed = server.parsedRequests.last?.fields["range"] ?? ""
        #expect(resumed.hasPrefix("bytes=") && !resumed.hasPrefix("bytes=0-"), "\(resumed)")
    }

    /// 50 bytes every 0.1 s (about 500 bytes/s, five times the minimum) for 3.7 s, measured
    /// over 3 s windows: slow, but never cut off. (A window that wide passes a stall of the one
    /// URLSession queue the process shares, which another test may hold for seconds under
    /// load; the transfer still outlasts a window, so the rule is applied.)
    @Test(arguments: transports)
    func aSteadyBodyAboveTheMinimumIsReadWhole(transport: HTTPDataSource.Transport) async throws {
        let server = try ScriptedHTTPServer(pacing: .init(after: 150, bytes: 50, interval: 0.1, steps: 40), respond: Self.answer)
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/steady")!
        let result = try await blocking {
            let source = HTTPDataSource(url: url, configuration: Self.configuration(maxRetries: 0, transport: transport, window: 3))
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            return try reader.readToEnd()
        }
        #expect((try? result.get()) == Self.bytes, "\(result.map(\.count))")
        #expect(server.parsedRequests.count == 1)
    }
}
