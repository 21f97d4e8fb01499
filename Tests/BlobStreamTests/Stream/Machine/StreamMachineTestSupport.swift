import Foundation
@testable import BlobStream

/// Helpers for driving a ``StreamMachine`` by hand, without threads or a source.
enum MachineHarness {
    static let resource = "machine"

    /// A machine opened on a blob of `length` bytes (`nil`: unknown), at `offset`.
    /// With `immediate`, over a source whose reads are immediate (``BlobDataSource/readsImmediately``).
    static func opened(
        _ mode: BlobInputStream.Mode, length: Int64? = 100, version: String? = "v1",
        blockSize: Int = 16, at offset: Int64 = 0, immediate: Bool = false
    ) -> StreamMachine {
        var machine = StreamMachine(mode: mode, resource: resource, immediateSource: immediate)
        var effects = StreamEffects()
        if offset > 0 { _ = machine.seek(to: offset, &effects) }
        _ = machine.open(blockSize: blockSize)
        _ = machine.startOpenCall()
        machine.endSourceCall(&effects)
        machine.openCompleted(.success(BlobSourceDescription(length: length, version: version)), &effects)
        return machine
    }

    static func events(_ effects: StreamEffects) -> [Stream.Event] {
        var list: [Stream.Event] = []
        effects.events.forEach { list.append($0) }
        return list
    }

    /// A buffer of `count` bytes for the test's lifetime (freed by the caller's `defer`).
    static func buffer(_ count: Int) -> UnsafeMutableRawBufferPointer {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 8)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        return buffer
    }

    /// Writes `count` bytes of `value` at the start of `region`, as a source would.
    static func fill(_ region: UnsafeMutableRawBufferPointer, _ count: Int, with value: UInt8 = 7) -> BlobSourceReadResult {
        for index in 0..<count { region[index] = value }
        return .read(count)
    }
}

extension StreamMachine.ReadStep {
    /// The count of a `.finish`, else `nil`.
    var finished: Int? {
        if case .finish(let count) = self { return count }
        return nil
    }

    /// The region and offset of a `.read`, else `nil`.
    var read: (region: UnsafeMutableRawBufferPointer, offset: Int64)? {
        if case .read(let region, let offset) = self { return (region, offset) }
        return nil
    }

    var confirmOffset: Int64? {
        if case .confirm(let offset) = self { return offset }
        return nil
    }

    var isWaitForSignal: Bool {
        if case .waitForSignal = self { return true }
        return false
    }

    var isReopen: Bool {
        if case .reopen = self { return true }
        return false
    }
}

extension StreamMachine.RefillStep {
    var read: (region: UnsafeMutableRawBufferPointer, offset: Int64, generation: Int)? {
        if case .read(let region, let offset, let generation) = self { return (region, offset, generation) }
        return nil
    }

    var isStop: Bool {
        if case .stop = self { return true }
        return false
    }

    var isNext: Bool {
        if case .next = self { return true }
        return false
    }

    var isReopen: Bool {
        if case .reopen = self { return true }
        return false
    }

    var confirm: (offset: Int64, confirmed: StreamMachine.Confirmed, generation: Int)? {
        if case .confirm(let offset, let confirmed, let generation) = self { return (offset, confirmed, generation) }
        return nil
    }
}

extension StreamMachine.AsynchronousRead {
    /// The first step of a `.fill`, else `nil`.
    var fill: StreamMachine.RefillStep? {
        if case .fill(let step) = self { return step }
        return nil
    }

    /// The count of a `.finish`, else `nil`.
    var finished: (count: Int, refill: Bool)? {
        if case .finish(let count, let refill) = self { return (count, refill) }
        return nil
    }
}
