import BlobStream
import BlobTestSupport
import Foundation
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
import SystemCalls
#endif

/// Failures end the task with the typed error, never with short data; cancellation closes the
/// source at once; a stale source is reopened; a changed one fails.
@Suite struct BlobURLProtocolFailureTests {
    /// Registers `factory` under a fresh scheme and returns a URL of it.
    private func scheme(_ factory: @escaping BlobURLRegistry.Factory) -> (url: URL, scheme: String) {
        let scheme = URLLoading.uniqueScheme("probe")
        BlobURLRegistry.shared.register(scheme: scheme, factory: factory)
        return (URL(string: "\(scheme)://blob")!, scheme)
    }

    @Test func missingAssetFailsTheTaskNamingTheAsset() async throws {
        let fixture = try URLAssetFixture()
        defer { fixture.remove() }
        let url = fixture.url("no-such-photo.jpg")
        await #expect(throws: BlobStreamError.self) { try await URLLoading.session().data(from: url) }
        let (data, response, error) = await URLLoading.completionTask(URLLoading.session(), URLRequest(url: url))
        #expect(data == nil && response == nil)
        let typed = try #require(error as? BlobStreamError)
        #expect(typed.description.contains("no-such-photo.jpg"), "\(typed)")
    }

    @Test func traversalIdentifierFailsTheTaskNamingTheAsset() async throws {
        let fixture = try URLAssetFixture()
        defer { fixture.remove() }
        let delegate = RecordingDataDelegate()
        URLLoading.session(delegate: delegate).dataTask(with: fixture.url("../x")).resume()
        let outcome = await delegate.completion()
        let typed = try #require(outcome.error as? BlobStreamError)
        guard case .unsupportedURL(let url, _) = typed else { Issue.record("\(typed)"); return }
        #expect(url.contains("../x"))
        #expect(outcome.received == 0)
    }

    /// What a caller holding only `any Error` or `NSError` sees on Linux.
    @Test func errorReachesTheCallerTyped() async throws {
        let fixture = try URLAssetFixture()
        defer { fixture.remove() }
        do {
            _ = try await URLLoading.session().data(from: fixture.url("gone"))
            Issue.record("a missing asset loaded")
        } catch {
            #expect(error is BlobStreamError)
            let nsError = error as NSError
            // Swift's default bridging: the type's name as domain, the message as description,
            // a code not to rely on, and the typed value gone for good once bridged.
            #expect(nsError.domain == "BlobStreamError")
            #expect(nsError.localizedDescription.contains("?id=gone"))
            #expect(!((nsError as any Error) is BlobStreamError))
        }
    }

    @Test(arguments: [false, true])
    func staleSourceIsReopenedAndBytesStayIdentical(delegateTask: Bool) async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: 3 << 20, seed: 11)
        let source = ScriptedDataSource(bytes: bytes, staleOffsets: [(1 << 20) + 5, 2 << 20], preferredBlockSize: 256 << 10)
        let (url, scheme) = scheme { _ in source }
        defer { BlobURLRegistry.shared.unregister(scheme: scheme) }
        if delegateTask {
            let delegate = RecordingDataDelegate()
            URLLoading.session(delegate: delegate).dataTask(with: url).resume()
            let outcome = await delegate.completion()
            #expect(outcome.error == nil)
            #expect(outcome.bytes == Data(bytes))
        } else {
            let (data, _) = try await URLLoading.session().data(from: url)
            #expect(data == Data(bytes))
        }
        #expect(source.invalidations == 2)
        #expect(source.openCount == 3)
    }

    @Test(arguments: [false, true])
    func sourceThatChangesVersionFailsTheTask(delegateTask: Bool) async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: 2 << 20, seed: 12)
        let source = ProbeDataSource(bytes: bytes, versions: ["v1", "v2"], preferredBlockSize: 256 << 10)
        let invalidated = LockedValue(false)
        source.onRead { offset, _ in
            guard offset >= 1 << 20 else { return .serve }
            return invalidated.withLock { done in
                defer { done = true }
                return done ? .serve : .answer(.invalidated)
            }
        }
        let (url, scheme) = scheme { _ in source }
        defer { BlobURLRegistry.shared.unregister(scheme: scheme) }
        let error: (any Error)?
        if delegateTask {
            let delegate = RecordingDataDelegate()
            URLLoading.session(delegate: delegate).dataTask(with: url).resume()
            let outcome = await delegate.completion()
            #expect(outcome.received < bytes.count)
            error = outcome.error
        } else {
            let result = await URLLoading.completionTask(URLLoading.session(), URLRequest(url: url))
            #expect(result.0 == nil)
            error = result.2
        }
        let typed = try #require(error as? BlobStreamError)
        guard case .sourceChanged(let resource, let offset, _) = typed else { Issue.record("\(typed)"); return }
        #expect(resource == "probe")
        #expect(offset >= 1 << 20)
    }

    @Test func sourceWhoseBytesArriveLaterIsReadWithoutBlocking() async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: 1 << 20, seed: 13)
        let source = ScriptedDataSource(bytes: bytes, preferredBlockSize: 64 << 10)
        source.wouldBlockDelay = 0.001
        source.maxBytesPerRead = 100_000
        let (url, scheme) = scheme { _ in source }
        defer { BlobURLRegistry.shared.unregister(scheme: scheme) }
        let (data, _) = try await URLLoading.session().data(from: url)
        #expect(data == Data(bytes))
    }

    @Test func cancellingMidTransferClosesTheSourceAndStopsCallbacks() async throws {
        let fixture = try URLAssetFixture()
        defer { fixture.remove() }
        let path = try fixture.add("long.bin", size: 64 << 20)
        let delegate = RecordingDataDelegate(keepsBytes: false)
        delegate.onFirstChunk = { task in
            #expect(URLLoading.openDescriptors(on: path) >= 1, "the asset is open while it is read")
            task.cancel()
        }
        let session = URLLoading.session(delegate: delegate)
        session.dataTask(with: fixture.url("long.bin")).resume()
        let outcome = await delegate.completion()
        #expect((outcome.error as? URLError)?.code == .cancelled)
        #expect(outcome.received < 64 << 20)
        // stopLoading closes the stream before the task fails; the stream closes its source
        // then, or when the read under way on the protocol's queue returns.
        #expect(eventually { URLLoading.openDescriptors(on: path) == 0 }, "the cancelled task left the asset open")
        // The delegate queue is serial: once this runs, every call queued before it has run.
        await withCheckedContinuation { continuation in session.delegateQueue.addOperation { continuation.resume() } }
        #expect(delegate.outcome.eventsAfterCompletion == 0)
    }

    /// FoundationNetworking's `suspend()` calls `stopLoading` and `resume()` calls
    /// `startLoading` again on the same protocol object: the body must go on where it stopped,
    /// not start again (which would hand the delegate the first blocks twice).
    @Test(arguments: [false, true])
    func suspendedAndResumedTaskGetsEveryByteOnce(delegateTask: Bool) async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: 6 << 20, seed: 15)
        let source = ProbeDataSource(bytes: bytes, preferredBlockSize: 256 << 10)
        let (url, scheme) = scheme { _ in source }
        defer { BlobURLRegistry.shared.unregister(scheme: scheme) }
        if delegateTask {
            let delegate = RecordingDataDelegate()
            // Twice: a transfer that continued another must hand on where it stood too.
            delegate.onChunk = { task, number in
                guard number == 1 || number == 3 else { return }
                task.suspend()
                task.resume()
            }
            URLLoading.session(delegate: delegate).dataTask(with: url).resume()
            let outcome = await delegate.completion()
            #expect(outcome.error == nil)
            #expect(outcome.received == bytes.count)
            #expect(outcome.bytes == Data(bytes))
        } else {
            let session = URLLoading.session()
            let result: (Data?, (any Error)?) = await withCheckedContinuation { continuation in
                let task = session.dataTask(with: url) { data, _, error in continuation.resume(returning: (data, error)) }
                task.resume()
                task.suspend()
                task.resume()
            }
            #expect(result.1 == nil)
            #expect(result.0 == Data(bytes))
        }
    }

    @Test func cancelledProbeSourceIsClosedAndNotReadAfterwards() async throws {
        let source = ProbeDataSource(bytes: TempFiles.pseudoRandomBytes(count: 8 << 20, seed: 14), preferredBlockSize: 256 << 10)
        let (url, scheme) = scheme { _ in source }
        defer { BlobURLRegistry.shared.unregister(scheme: scheme) }
        let delegate = RecordingDataDelegate(keepsBytes: false)
        delegate.onFirstChunk = { $0.cancel() }
        URLLoading.session(delegate: delegate).dataTask(with: url).resume()
        let outcome = await delegate.completion()
        #expect((outcome.error as? URLError)?.code == .cancelled)
        // stopLoading closes the stream before the task fails; the stream closes its source
        // then, or when the read it was running ahead returns.
        #expect(eventually { source.calls.last == .close }, "the cancelled task left its source open: \(source.calls)")
        #expect(source.violations.isEmpty, "\(source.violations)")
    }
}
