@testable import BlobStream
import BlobTestSupport
import Foundation
import Glibc
import Testing

/// A size is trusted only once a read confirms it (README, "Sizes that lie"): a file or asset
/// whose status announces fewer bytes than it holds is read to its real end or refused with
/// ``BlobStreamError/lengthExceeded(resource:length:)``, never delivered silently short.
@Suite struct LyingSizeTests {
    /// A pseudo file whose `stat` size is 0 but whose content is stable for this process.
    static let procFile = "/proc/self/cmdline"

    /// The bytes of `path` as plain `read(2)` calls give them, to the end.
    static func contentByReading(_ path: String) throws -> [UInt8] {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw TestSupportError("open \(path): errno \(errno)") }
        defer { Glibc.close(fd) }
        var bytes: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Glibc.read(fd, &buffer, buffer.count)
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return bytes
    }

    /// A source over `path` that sees its size as `shortBy` bytes less than it is.
    static func understating(_ path: String, by shortBy: Int) -> FileDataSource {
        FileDataSource(path: path) { status in
            var status = status
            status.st_size -= off_t(min(shortBy, Int(status.st_size)))
            return status
        }
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func aPseudoFileOfSizeZeroIsReadToItsRealEnd(mode: BlobInputStream.Mode) throws {
        var status = stat()
        try #require(stat(Self.procFile, &status) == 0 && status.st_size == 0, "\(Self.procFile) should announce 0 bytes")
        let expected = try Self.contentByReading(Self.procFile)
        try #require(!expected.isEmpty)
        let stream = BlobInputStream(fileAtPath: Self.procFile, mode: mode)
        let read = try StreamHarness.readAll(stream, chunk: 7)
        #expect(read.count == expected.count)
        #expect(read == expected)
        #expect(stream.length == nil, "a contradicted size is announced as unknown")
    }

    /// An offset past the real end of a pseudo file is no offset of it: the read fails with
    /// `invalidOffset`, as for a regular file, instead of ending cleanly there (the empty
    /// blob's digest, exit 0) and taking that offset for the blob's length.
    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func anOffsetPastAPseudoFilesEndIsInvalid(mode: BlobInputStream.Mode) throws {
        let content = try Self.contentByReading(Self.procFile)
        let stream = BlobInputStream(fileAtPath: Self.procFile, mode: mode)
        try stream.seek(to: Int64(content.count) + 5000)
        let outcome = Result { try StreamHarness.readAll(stream, chunk: 64) }
        guard case .failure(let error) = outcome, case .invalidOffset(Self.procFile, Int64(content.count) + 5000, _)? = error as? BlobStreamError else {
            Issue.record("not an invalid offset: \(outcome)")
            return
        }
        // At the real end, the blob ends there.
        let atEnd = BlobInputStream(fileAtPath: Self.procFile, mode: mode)
        try atEnd.seek(to: Int64(content.count))
        #expect(try StreamHarness.readAll(atEnd, chunk: 64).isEmpty)

        let command = try ToolProcess.run(ToolProcess.blobstream(), ["checksum", "--offset", "100000", Self.procFile])
        #expect(command.status == 1, "\(command.standardOutput)")
        #expect(command.standardError.contains("invalid offset 100000"), "\(command.standardError)")
    }

    @Test func theChecksumCommandHashesAPseudoFileAsSha256sumDoes() async throws {
        let path = "/proc/version"
        let ours = try await ChecksumFixtures.runExecutable(ToolProcess.blobstream(), ["checksum", path])
        let reference = try await ChecksumFixtures.run("sha256sum", [path], installHint: "apt-get install coreutils")
        #expect(ours.status == 0)
        #expect(ours.standardOutput == reference.standardOutput)
        #expect(!ours.standardOutput.hasPrefix("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "not the empty blob's digest")
    }

    @Test func anEmptyFileStillAnnouncesZero() throws {
        let path = try FileDataSourceTests.temporaryFile([])
        defer { TempFiles.remove(path) }
        #expect(try openAndWait(FileDataSource(path: path))?.get().length == 0)
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous], [1, 65_536, 300_000])
    func aFileLongerThanItsNonZeroSizeFailsAtTheAnnouncedEnd(mode: BlobInputStream.Mode, shortBy: Int) throws {
        let bytes = assetTestBytes(count: 1_000_000)
        let path = try FileDataSourceTests.temporaryFile(bytes)
        defer { TempFiles.remove(path) }
        let stream = BlobInputStream(dataSource: Self.understating(path, by: shortBy), mode: mode)
        stream.blockSize = 65_536
        let drained = StreamHarness.drain(stream, chunk: 65_536)
        let announced = Int64(bytes.count - shortBy)
        #expect(drained.error == .lengthExceeded(resource: path, length: announced))
        #expect(drained.bytes.count < Int(announced), "the last bytes before the announced end are held back")
        #expect(drained.error?.description.contains("holds more bytes than the \(announced) its size announced") == true)
    }

    @Test func aFileWhoseSizeSaysZeroIsReadToItsEndThroughAnyConsumer() async throws {
        let bytes = assetTestBytes(count: 200_003)
        let path = try FileDataSourceTests.temporaryFile(bytes)
        defer { TempFiles.remove(path) }
        var collected: [UInt8] = []
        for try await chunk in BlobChunks(dataSource: Self.understating(path, by: bytes.count)) {
            chunk.withUnsafeBytes { collected += $0 }
        }
        #expect(collected.count == bytes.count)
        #expect(SHA256.digest(of: collected) == SHA256.digest(of: bytes))
        let digest = try await ChecksumAlgorithm.sha256.digest(of: Self.understating(path, by: bytes.count))
        #expect(digest == SHA256.digest(of: bytes))
    }

    @Test func anAssetLongerThanItsSizeFailsAtTheAnnouncedEnd() throws {
        let bytes = assetTestBytes(count: 300_000)
        let store = SourceStore { UnderstatingAssetSource(bytes: bytes, announced: 200_000) }
        let stream = BlobInputStream(dataSource: AssetDataSource(store: store, identifier: "photo"))
        let drained = StreamHarness.drain(stream)
        #expect(drained.error == .lengthExceeded(resource: "asset://?id=photo", length: 200_000))
        #expect(drained.bytes.count < 200_000)
    }

    @Test func aDirectoryAssetNoticesBytesPastItsSize() async throws {
        let folder = try AssetTemporaryFolder()
        let store = try DirectoryAssetStore(directory: folder.path)
        let source = try folder.file("source", assetTestBytes(count: 10_000))
        let identifier = try store.import(fileAt: source)
        let resolved = try #require(try await store.resolve(identifier) as? DirectoryAssetSource)
        #expect(try openAndWait(resolved)?.get().length == 10_000)
        #expect(resolved.bytesPastLength() == nil)
        #expect(resolved.confirmUnchanged(at: 10_000) == nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: try store.path(of: identifier)))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([1, 2, 3]))
        try handle.close()
        #expect(resolved.bytesPastLength() == .lengthExceeded(resource: "asset://?id=\(identifier)", length: 10_000))
        // A regular file's status grows with it, so before the end the version check speaks first.
        guard case .sourceChanged("asset://?id=\(identifier)", 10_000, let reason)? = resolved.confirmUnchanged(at: 10_000) else {
            Issue.record("an append is not reported as a change")
            return
        }
        #expect(reason.contains("size"), "\(reason)")
    }
}

/// One asset version that announces fewer bytes than it holds, honest about what follows its
/// announced length when asked before the end.
final class UnderstatingAssetSource: ForwardingDataSource {
    let base: any BlobDataSource
    let bytes: [UInt8]
    let announced: Int64

    init(bytes: [UInt8], announced: Int64) {
        self.base = MemoryDataSource(data: Data(bytes), name: "understating")
        self.bytes = bytes
        self.announced = announced
    }

    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        completion(.success(BlobSourceDescription(length: announced, version: "v1")))
    }

    func open(at offset: Int64, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        open(completion: completion)
    }

    func confirmUnchanged(at offset: Int64) -> BlobStreamError? {
        Int64(bytes.count) > announced ? .lengthExceeded(resource: resourceName, length: announced) : nil
    }
}
