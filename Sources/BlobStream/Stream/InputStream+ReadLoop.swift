import Foundation

/// Why ``Foundation/InputStream/readLoop(into:waitsForEvents:stopped:consume:)`` returned.
package enum ReadLoopStop: Sendable, Equatable {
    /// `consume` had no more room to give.
    case filled
    /// The stream is at its end, or a read returned 0. The caller decides what that means: a
    /// checksum requires the `.atEnd` status, an upload of a declared length a full buffer.
    case end
    /// With `waitsForEvents`: no bytes now, and the stream's next `.hasBytesAvailable` resumes.
    case waiting
    /// `stopped` said so, before a read or after one that brought no bytes (a stream closed
    /// from another thread to interrupt a read fails that read).
    case stopped
    /// A read failed, or the stream is closed or failed; its `typedError` says why.
    case failed
}

extension InputStream {
    /// A read-and-hash loop for any `InputStream`: reads into `room`, hands
    /// each read's bytes to `consume` while they are still in the CPU's cache (to hash them, or
    /// to pass the buffer on) and reads on into the room `consume` returns, until it returns
    /// `nil`, the stream ends or fails, or `stopped` says so. The checksum calculator (blocking
    /// and event-driven) and the upload readers (`BodyReading`) are its callers; each maps the
    /// stop to its own errors.
    ///
    /// Foundation's data streams can say "no bytes available" while still `.open` at an empty
    /// end, and only a read that returns 0 moves them to `.atEnd`; so a blocking loop reads on
    /// unless the stream is closed or failed. With `waitsForEvents`, "no bytes" (or a read that failed with
    /// ``BlobStreamError/wouldBlock(offset:)``) means the next event resumes.
    /// - Parameters:
    ///   - room: Where the first read goes; not empty.
    ///   - waitsForEvents: Whether the stream is asynchronous and read from its events.
    ///   - stopped: Asked before every read, and after a read that brought no bytes.
    ///   - consume: Takes the bytes of one read (more than zero); returns where the next read
    ///     goes (not empty), or `nil` when the caller wants no more.
    package func readLoop(
        into room: UnsafeMutableRawBufferPointer, waitsForEvents: Bool = false, stopped: () -> Bool,
        consume: (UnsafeRawBufferPointer) -> UnsafeMutableRawBufferPointer?
    ) -> ReadLoopStop {
        var room = room
        while true {
            if stopped() { return .stopped }
            if streamStatus == .atEnd { return .end }
            if !hasBytesAvailable {
                if waitsForEvents { return .waiting }
                // A closed or failed stream has no bytes to give; any other is read, since a
                // stream that keeps no status (a plain subclass stays `.notOpen`) tells its
                // end only by a read of 0, as FoundationNetworking takes it.
                if streamStatus == .closed || streamStatus == .error { return .failed }
            }
            guard let base = room.baseAddress, !room.isEmpty else { return .filled }
            let count = read(base.assumingMemoryBound(to: UInt8.self), maxLength: room.count)
            if count > 0 {
                guard let next = consume(UnsafeRawBufferPointer(start: base, count: count)) else { return .filled }
                room = next
                continue
            }
            if stopped() { return .stopped }
            if count == 0 { return .end }
            if waitsForEvents, typedError?.isWouldBlock == true { return .waiting }
            return .failed
        }
    }
}
