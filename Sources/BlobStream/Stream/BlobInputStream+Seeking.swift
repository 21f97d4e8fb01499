import Foundation

/// Offsets: reading `.fileCurrentOffsetKey` values, and seeking.
extension BlobInputStream {
    /// The offset `number` names, or `nil` when it is no whole number from 0 to `Int64.max`.
    /// `int64Value` alone would truncate 1.5 to 1 and wrap `UInt64.max` to -1.
    static func offset(from number: NSNumber) -> Int64? {
        switch String(cString: number.objCType) {
        case "d", "f":
            let value = number.doubleValue
            // 2^63 is the first double above Int64.max; NaN fails every comparison.
            guard value >= 0, value < 0x1p63, value.rounded(.towardZero) == value else { return nil }
            return Int64(value)
        case "Q", "L", "I", "S", "C":
            return Int64(exactly: number.uint64Value)
        default:
            let value = number.int64Value
            return value >= 0 ? value : nil
        }
    }

    /// Moves to `newOffset`: before the open, where the first read starts; after it, a seek.
    /// See the type's documentation for what is refused and which events follow.
    /// - Throws: ``BlobStreamError/invalidOffset(resource:offset:length:)`` for a negative
    ///   offset or one past a known length, ``BlobStreamError/closed`` after `close()`, and the
    ///   stream's own error once it failed.
    public func seek(to newOffset: Int64) throws(BlobStreamError) {
        if let refusal = move(to: newOffset) { throw refusal }
    }

    /// The seek; returns why it was refused, or `nil` once done.
    func move(to newOffset: Int64) -> BlobStreamError? {
        guard newOffset >= 0 else {
            return .invalidOffset(resource: dataSource.resourceName, offset: newOffset, length: length)
        }
        lock.lock()
        enterReader()
        var effects = StreamEffects()
        let refusal = machine.seek(to: newOffset, &effects)
        commit(effects)
        leaveReader()
        lock.unlock()
        perform(effects)
        return refusal
    }
}
