import BlobStream
import Foundation

/// One conformance suite every ``BlobDataSource`` must pass, in the manner of Go's
/// `testing/fstest.TestFS` and `testing/iotest`: give it a source over known bytes and what the
/// source can do, and it drives the contract the way a stream does (open, reads that wait
/// through `wouldBlock`, confirmation, close, reopen) and reports every deviation.
///
/// It checks: `open` completes exactly once, with the declared length (when the source knows
/// one); reads of every size yield the exact bytes, never zero and never more than asked, and
/// the data ends with ``BlobSourceReadResult/end`` (or at the known length); `whenReadable`
/// comes exactly once after `wouldBlock`, which a source whose reads are immediate never
/// answers; the unchanged blob is confirmed at its end; `close`
/// is idempotent. Positional sources are read at random offsets and reopened at an offset;
/// reopenable sources are reopened after a close, with the same version; read-once sources
/// refuse a second open and a read out of order.
public enum DataSourceConformance {
    /// What the source under test can do.
    public struct Abilities: Sendable {
        /// Reads at any offset, in any order.
        public var positional: Bool
        /// Opens again after `close`, with the same bytes.
        public var reopenable: Bool
        /// Declares its length when it opens.
        public var knowsLength: Bool

        /// A file, a memory buffer, an asset, an HTTP blob.
        public static let positional = Abilities(positional: true, reopenable: true, knowsLength: true)
        /// A pipe, live data.
        public static let readOnce = Abilities(positional: false, reopenable: false, knowsLength: false)
        /// One version of an asset as its store resolved it: read at any offset, but not
        /// opened again after `close` (the store resolves again instead).
        public static let resolvedVersion = Abilities(positional: true, reopenable: false, knowsLength: true)

        public init(positional: Bool, reopenable: Bool, knowsLength: Bool) {
            self.positional = positional
            self.reopenable = reopenable
            self.knowsLength = knowsLength
        }
    }

    /// Runs the suite against sources `make` returns (a fresh one per check; each must serve
    /// `bytes`), and returns every deviation found, each naming its check; empty when the
    /// sources conform. Blocks the calling thread, which must not be one of Swift's
    /// cooperative threads.
    public static func check(
        _ abilities: Abilities, bytes: [UInt8], timeout: TimeInterval = 30, make: () throws -> any BlobDataSource
    ) rethrows -> [String] {
        var problems: [String] = []
        func run(_ name: String, _ body: (Driver) throws -> Void) throws {
            let driver = Driver(source: try make(), timeout: timeout)
            defer { driver.source.close() }
            do {
                try body(driver)
            } catch {
                problems.append("\(name): \(error)")
            }
            problems += driver.problems.map { "\(name): \($0)" }
        }
        // Read sizes a stream uses, and awkward ones: 1 byte, a prime, the block size, more than all.
        for size in [1, 4093, 64 * 1024, bytes.count + 17] where size <= max(1 << 20, bytes.count + 17) {
            if size == 1, bytes.count > 256 * 1024 { continue }
            try? run("sequential reads of \(size) bytes") { driver in
                let description = try driver.open(at: 0)
                try expectLength(description, abilities, bytes, driver)
                let read = try driver.readToEnd(from: 0, size: size, length: description.length)
                driver.expect(read == bytes, "read \(read.count) bytes, not the \(bytes.count) expected (first difference at \(firstDifference(read, bytes)))")
                if let length = description.length {
                    driver.expect(driver.source.confirmUnchanged(at: length) == nil, "the unchanged blob was not confirmed at its end")
                }
                driver.source.close()
                driver.source.close()
            }
        }
        if abilities.positional {
            try? run("reads at random offsets") { driver in
                _ = try driver.open(at: 0)
                var generator = SeededGenerator(seed: UInt64(bytes.count))
                for _ in 0..<24 where !bytes.isEmpty {
                    let offset = Int.random(in: 0..<bytes.count, using: &generator)
                    let count = Int.random(in: 1...min(100_000, bytes.count - offset), using: &generator)
                    let read = try driver.readFully(at: Int64(offset), count: count)
                    driver.expect(read == Array(bytes[offset..<offset + count]), "\(count) bytes at \(offset) differ")
                }
            }
            try? run("open at an offset") { driver in
                let offset = bytes.count / 3
                let description = try driver.open(at: Int64(offset))
                let read = try driver.readToEnd(from: Int64(offset), size: 64 * 1024, length: description.length)
                driver.expect(read == Array(bytes[offset...]), "the bytes from \(offset) differ")
            }
        }
        if abilities.reopenable {
            try? run("reopen after close") { driver in
                let first = try driver.open(at: 0)
                _ = try driver.readFully(at: 0, count: min(1000, bytes.count))
                driver.source.close()
                let second = try driver.open(at: 0)
                driver.expect(second.version == first.version, "the version changed across a reopen: \(String(describing: first.version)) then \(String(describing: second.version))")
                let read = try driver.readToEnd(from: 0, size: 64 * 1024, length: second.length)
                driver.expect(read == bytes, "the bytes after a reopen differ")
            }
        } else {
            try? run(abilities.positional ? "open once" : "read once") { driver in
                _ = try driver.open(at: 0)
                if !abilities.positional, bytes.count > 1 {
                    _ = try driver.readFully(at: 0, count: 1)
                    switch try driver.readOnce(at: 0, size: 1) {
                    case .failed: break
                    case let other: driver.problems.append("a read back at offset 0 answered \(other), not a failure")
                    }
                }
                driver.source.close()
                switch driver.openOutcome(at: 0) {
                case .failure?: break
                case let other: driver.problems.append("a second open answered \(String(describing: other)), not a failure")
                }
            }
        }
        return problems
    }

    private static func expectLength(_ description: BlobSourceDescription, _ abilities: Abilities, _ bytes: [UInt8], _ driver: Driver) throws {
        if abilities.knowsLength {
            driver.expect(description.length == Int64(bytes.count), "open declared length \(String(describing: description.length)), not \(bytes.count)")
        } else if let length = description.length {
            driver.expect(length == Int64(bytes.count), "open declared length \(length), not \(bytes.count)")
        }
    }

    private static func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> Int {
        zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, b.count)
    }

    /// Drives one source as a stream does, recording what breaks the contract.
    final class Driver: @unchecked Sendable {
        let source: any BlobDataSource
        let timeout: TimeInterval
        var problems: [String] = []

        init(source: any BlobDataSource, timeout: TimeInterval) {
            self.source = source
            self.timeout = timeout
        }

        func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
            if !condition { problems.append(message()) }
        }

        /// The open's outcome, or `nil` when its completion did not come in time; a second call
        /// of the completion is a problem.
        func openOutcome(at offset: Int64) -> Result<BlobSourceDescription, BlobStreamError>? {
            let calls = Locked(0)
            let outcome = Handoff<Result<BlobSourceDescription, BlobStreamError>>()
            source.open(at: offset) { result in
                calls.mutate { $0 += 1 }
                outcome.set(result)
            }
            let done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var result: Result<BlobSourceDescription, BlobStreamError>?
            DispatchQueue.global().async {
                result = outcome.wait()
                done.signal()
            }
            guard done.wait(timeout: .now() + timeout) == .success else { return nil }
            // A late second completion would be a breach of "exactly once".
            Thread.sleep(forTimeInterval: 0.01)
            if calls.value != 1 { problems.append("open called its completion \(calls.value) times") }
            return result
        }

        func open(at offset: Int64) throws -> BlobSourceDescription {
            guard let outcome = openOutcome(at: offset) else { throw TestSupportError("open did not complete within \(timeout) s") }
            return try outcome.get()
        }

        /// One read of up to `size` bytes at `offset`, waiting through `wouldBlock`.
        func readOnce(at offset: Int64, size: Int) throws -> BlobSourceReadResult {
            var buffer = [UInt8](repeating: 0, count: size)
            return try read(at: offset, into: &buffer)
        }

        private func read(at offset: Int64, into buffer: inout [UInt8]) throws -> BlobSourceReadResult {
            while true {
                let calls = Locked(0)
                let signal = DispatchSemaphore(value: 0)
                let result = buffer.withUnsafeMutableBytes { raw in
                    source.read(into: raw, at: offset) {
                        calls.mutate { $0 += 1 }
                        signal.signal()
                    }
                }
                if case .read(let count) = result, count <= 0 || count > buffer.count {
                    // Thrown: a caller that went on would loop for ever (0) or read past the buffer.
                    throw TestSupportError("a read of \(buffer.count) bytes at \(offset) answered read(\(count))")
                }
                guard result == .wouldBlock else {
                    if calls.value != 0 { problems.append("whenReadable was called for a read that answered \(result)") }
                    return result
                }
                if source.readsImmediately {
                    problems.append("a source whose reads are immediate answered wouldBlock at offset \(offset)")
                }
                guard signal.wait(timeout: .now() + timeout) == .success else {
                    throw TestSupportError("no whenReadable within \(timeout) s after wouldBlock at offset \(offset)")
                }
                if calls.value != 1 { problems.append("whenReadable was called \(calls.value) times for one wouldBlock") }
            }
        }

        /// Exactly `count` bytes at `offset`, in as many reads as it takes.
        func readFully(at offset: Int64, count: Int) throws -> [UInt8] {
            var output: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: count)
            while output.count < count {
                switch try read(at: offset + Int64(output.count), into: &buffer) {
                case .read(let n): output += buffer[0..<min(n, count - output.count)]
                case let other: throw TestSupportError("at \(offset + Int64(output.count)): \(other) before \(count) bytes")
                }
            }
            return output
        }

        /// From `offset` to the end, in reads of `size`: the known `length`, or the source's `end`.
        func readToEnd(from offset: Int64, size: Int, length: Int64?) throws -> [UInt8] {
            var output: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: size)
            var position = offset
            while length.map({ position < $0 }) ?? true {
                switch try read(at: position, into: &buffer) {
                case .read(let n):
                    output += buffer[0..<n]
                    position += Int64(n)
                case .end:
                    expect(length == nil, "end at \(position), before the declared length \(length ?? 0)")
                    return output
                case let other:
                    throw TestSupportError("at \(position): \(other)")
                }
            }
            return output
        }
    }
}
