import BlobStream
import BlobTestSupport
import Foundation
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
import SystemCalls
#endif

/// A source that claims a length it would take forever to read (and more memory than exists to
/// hold), and records whether it was closed.
private final class ClaimingDataSource: BlobDataSource {
    let resourceName: String
    let length: Int64
    private let closed = LockedValue(false)

    init(url: URL, length: Int64) {
        resourceName = url.absoluteString
        self.length = length
    }

    var isClosed: Bool { closed.withLock { $0 } }

    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        completion(.success(BlobSourceDescription(length: length, version: "claims-\(length)")))
    }

    func read(
        into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        let count = Int(min(Int64(buffer.count), length - offset))
        guard count > 0 else { return .end }
        buffer.initializeMemory(as: UInt8.self, repeating: 0x2A)
        return .read(count)
    }

    func close() { closed.withLock { $0 = true } }
}

/// Completion-handler and `async` tasks get the body in one piece (see `BodyDelivery`); a body
/// too large for that is refused with a typed error up front, not allocated at its claimed size.
@Suite struct BlobURLProtocolWholeBodyTests {
    static let claimed = Int64.max / 2

    private func expectRefusal(_ error: (any Error)?, url: URL) {
        guard case .unsupportedURL(let named, let reason)? = error as? BlobStreamError else {
            Issue.record("expected BlobStreamError.unsupportedURL, got \(String(describing: error))")
            return
        }
        #expect(named == url.absoluteString)
        #expect(reason.contains("delegate"), "\(reason)")
        #expect(reason.contains(String(Self.claimed)), "\(reason)")
    }

    @Test func completionHandlerTaskOfAHugeBlobFailsTyped() async throws {
        let scheme = URLLoading.uniqueScheme("huge")
        let url = URL(string: "\(scheme)://blob")!
        let source = ClaimingDataSource(url: url, length: Self.claimed)
        BlobURLRegistry.shared.register(scheme: scheme) { _ in source }
        defer { BlobURLRegistry.shared.unregister(scheme: scheme) }
        let (data, _, error) = await URLLoading.completionTask(URLLoading.session(), URLRequest(url: url))
        expectRefusal(error, url: url)
        #expect(data == nil || data?.isEmpty == true)
        // The stream closes its source now, or when the read it started after the open returns.
        #expect(eventually { source.isClosed }, "the refused task left its source open")
    }

    @Test func asyncDataOfAHugeBlobFailsTyped() async throws {
        let scheme = URLLoading.uniqueScheme("huge")
        let url = URL(string: "\(scheme)://blob")!
        let source = ClaimingDataSource(url: url, length: Self.claimed)
        BlobURLRegistry.shared.register(scheme: scheme) { _ in source }
        defer { BlobURLRegistry.shared.unregister(scheme: scheme) }
        do {
            _ = try await URLLoading.session().data(from: url)
            Issue.record("a blob claiming \(Self.claimed) bytes loaded")
        } catch {
            expectRefusal(error, url: url)
        }
        // The stream closes its source now, or when the read it started after the open returns.
        #expect(eventually { source.isClosed }, "the refused task left its source open")
    }
}
