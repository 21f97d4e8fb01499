import BlobStream
import BlobTestSupport
import Foundation
import Glibc
import Testing

/// A FIFO, socket or device cannot be read at any offset. Opening one must fail at once with
/// ``BlobStreamError/notRegularFile(path:kind:)``: a FIFO without a writer used to block
/// `open(2)` for good, beyond the reach of the open timeout and `close()`.
@Suite struct SpecialFileTests {
    static func fifo() throws -> (directory: String, path: String) {
        let directory = try TempFiles.makeDirectory(prefix: "special-file")
        let path = directory + "/fifo"
        guard mkfifo(path, 0o600) == 0 else {
            let failure = errno
            TempFiles.remove(directory)
            throw TestSupportError("mkfifo failed: errno \(failure)")
        }
        return (directory, path)
    }

    @Test func aFIFOWithoutAWriterIsRefusedAtOnce() throws {
        let (directory, path) = try Self.fifo()
        defer { TempFiles.remove(directory) }
        let outcome = FileMutation.withWatchdog(release: { FileMutation.releaseFIFOReader(path) }) {
            FileMutation.openSource(FileDataSource(path: path))
        }
        guard case .failure(let error) = outcome else {
            Issue.record("the FIFO opened: \(String(describing: outcome))")
            return
        }
        #expect(error == .notRegularFile(path: path, kind: "FIFO"))
        #expect(error.description == "\(path): is a FIFO, not a regular file; only regular files can be read at any offset")
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func aStreamOfAFIFOFailsToOpenAtOnce(mode: BlobInputStream.Mode) throws {
        let (directory, path) = try Self.fifo()
        defer { TempFiles.remove(directory) }
        let error = FileMutation.withWatchdog(release: { FileMutation.releaseFIFOReader(path) }) {
            let stream = BlobInputStream(fileAtPath: path, mode: mode)
            let recorder = EventRecorder()
            stream.delegate = recorder
            stream.delegateQueue = DispatchQueue(label: "fifo-events")
            stream.open()
            defer { stream.close() }
            #expect(recorder.wait(for: .errorOccurred))
            return stream.blobError
        }
        #expect(error == .notRegularFile(path: path, kind: "FIFO"))
    }

    @Test func aCharacterDeviceIsRefused() {
        #expect(FileMutation.openSource(FileDataSource(path: "/dev/null")).failure == .notRegularFile(path: "/dev/null", kind: "character device"))
    }

    @Test func aBlockDeviceIsRefused() throws {
        let candidates = ["/dev/loop0", "/dev/sda", "/dev/vda", "/dev/nvme0n1"]
        guard let device = candidates.first(where: { (try? FileMutation.status($0)).map { ($0.st_mode & S_IFMT) == S_IFBLK } == true }) else {
            return // no block device on this machine
        }
        let result = FileMutation.openSource(FileDataSource(path: device))
        if result.failure == .permissionDenied(resource: device) { return } // not ours to open
        #expect(result.failure == .notRegularFile(path: device, kind: "block device"))
    }

    @Test func aUnixSocketIsRefused() throws {
        let directory = try TempFiles.makeDirectory(prefix: "special-socket")
        defer { TempFiles.remove(directory) }
        let path = directory + "/socket"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0)
        #expect(FileMutation.openSource(FileDataSource(path: path)).failure == .notRegularFile(path: path, kind: "socket"))
    }
}

extension Result {
    /// The error, or `nil` on success.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
