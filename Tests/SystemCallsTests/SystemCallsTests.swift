#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SystemCalls
import Testing

/// The contract of the one system-call layer: EINTR retried in one place, descriptors closed
/// exactly when the last holder lets go (and borrowed ones never), non-blocking pipes, and a
/// poll that tells readiness from a wake-up.
@Suite struct SystemCallsTests {
    @Test func valueOrErrnoRetriesAnInterruptedCallAndReportsAnyOtherFailure() {
        var calls = 0
        let retried = valueOrErrno { () -> Int32 in
            calls += 1
            if calls < 3 {
                errno = EINTR
                return -1
            }
            return 7
        }
        #expect(retried == .success(7))
        #expect(calls == 3)

        let failed = valueOrErrno { () -> Int in
            errno = EBADF
            return -1
        }
        #expect(failed == .failure(Errno(EBADF)))
        #expect(Errno(EBADF).text.hasSuffix("(errno \(EBADF))"))
    }

    @Test func aPipeIsNonBlockingAndItsWriteEndClosesWhenTheLastHolderLetsGo() throws {
        var (read, write): (FileDescriptor, FileDescriptor?) = try FileDescriptor.pipe().get()
        var byte: UInt8 = 0
        let empty = withUnsafeMutableBytes(of: &byte) { read.read(into: $0) }
        #expect(empty == .failure(Errno(EAGAIN)), "a read of an empty pipe waited or did not say EAGAIN")

        write = nil
        let end = withUnsafeMutableBytes(of: &byte) { read.read(into: $0) }
        #expect(end == .success(0), "the write end was not closed with its last reference")
        _ = write
    }

    @Test func aBorrowedDescriptorIsNeverClosed() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { ends.forEach { _ = close($0) } }
        var borrowed: FileDescriptor? = FileDescriptor(borrowing: ends[0])
        #expect(borrowed?.poll(for: .readable, milliseconds: 0).map(\.isReady) == .success(false))
        borrowed = nil
        #expect(fcntl(ends[0], F_GETFD) >= 0, "a borrowed descriptor was closed")
    }

    @Test func pollTellsReadinessFromAWakeUp() throws {
        let data = try FileDescriptor.pipe().get()
        let wake = try FileDescriptor.pipe().get()
        let idle = try data.read.poll(for: .readable, orWakeUpFrom: wake.read, milliseconds: 0).get()
        #expect(!idle.isReady && !idle.isWokenUp)
        wake.write.wakeUp()
        let woken = try data.read.poll(for: .readable, orWakeUpFrom: wake.read, milliseconds: -1).get()
        #expect(!woken.isReady && woken.isWokenUp)
        var byte: UInt8 = 1
        #expect(withUnsafeBytes(of: &byte) { data.write.writeAll($0) } == nil)
        let ready = try data.read.poll(for: .readable, milliseconds: -1).get()
        #expect(ready.isReady && !ready.isWokenUp)
        #expect(data.write.poll(for: .writable, milliseconds: 0).map(\.isReady) == .success(true))
    }

    @Test func pathCallsReportErrnoAndTheKindOfFile() {
        #expect(FileSystem.status(atPath: "/nonexistent/blobstream").map(\.kind) == .failure(Errno(ENOENT)))
        #expect(FileSystem.linkStatus(atPath: "/").map(\.isDirectory) == .success(true))
        #expect(FileSystem.unlink("/nonexistent/blobstream") == Errno(ENOENT))
        #expect(FileDescriptor.open("/nonexistent/blobstream", O_RDONLY | O_CLOEXEC).map { _ in 0 } == .failure(Errno(ENOENT)))
    }
}

/// The calls the command line makes through this layer.
@Suite struct CommandLineCallsTests {
    @Test func aPipeIsNoTerminalAndHasNoColumns() throws {
        let (read, write) = try FileDescriptor.pipe().get()
        #expect(!read.isTerminal)
        #expect(write.terminalColumns == nil)
    }

    @Test func aFIFOIsReadOnceAndARegularFileIsNot() throws {
        let path = "/tmp/systemcalls-fifo-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        #expect(try FileSystem.status(atPath: path).get().isReadOnce)
        #expect(try FileSystem.status(atPath: "/dev/null").get().isReadOnce)
        #expect(try !FileSystem.status(atPath: "/etc/hostname").get().isReadOnce)
    }
}
