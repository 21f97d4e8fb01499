import BlobStream
import Foundation

/// The stream side of a ``TusChunkReader``: positioning its stream at an offset (opening a new one,
/// seeking, or reading and dropping), reading bytes from it into a buffer, and making sure it
/// ends where the source's length says. Called on the reader's queue only.
extension TusChunkReader {
    /// Reads from the stream, which yields `slot.end` next, until `slot` reaches `end`; at the
    /// source's end, makes sure the stream has no more bytes.
    func fill(_ slot: inout Slot, to end: Int64) throws(BlobUploadError) {
        if slot.end < end {
            let room = UnsafeMutableRawBufferPointer(rebasing: slot.buffer[slot.count..<(slot.count + Int(end - slot.end))])
            let count = try read(into: room, expectedLength: total, filling: true)
            slot.count += count
            // Only live data ends without a length declared: a short fill is its end.
            if count < room.count { total = slot.end }
        }
        if slot.end == total, !source.isLive {
            try requireEnd()
        }
    }

    /// ``BodyReading/requireEnd(of:at:source:)`` at the source's length.
    func requireEnd() throws(BlobUploadError) {
        guard let stream, let total else { return }
        do {
            try BodyReading.requireEnd(of: stream, at: total, source: source)
        } catch {
            closeStream()
            throw error
        }
    }

    /// Leaves `stream` yielding the byte at `offset` next, with an empty current buffer there
    /// and nothing read ahead.
    func reposition(to offset: Int64) throws(BlobUploadError) {
        current.start = offset
        current.count = 0
        prefetched = false
        if let open = stream, streamOffset != offset {
            if let seekable = open as? any SeekableStream, (try? seekable.seek(to: offset)) != nil {
                streamOffset = offset
            } else if streamOffset > offset {
                closeStream()
            }
        }
        if stream == nil {
            let positioned = try source.stream(at: offset, pinnedTo: pin)
            stream = positioned.stream
            streamOffset = positioned.startOffset
            interrupter.watch(positioned.stream)
            positioned.stream.open()
            if positioned.stream.streamStatus == .error {
                let failure = positioned.stream.uploadFailure(resource: source.name, at: positioned.startOffset)
                closeStream()
                throw failure
            }
            let declared = total ?? source.length
            if let opened = positioned.stream as? any MeasuredStream, let length = opened.length, let declared, length != declared {
                closeStream()
                throw .lengthMismatch(url: source.name, serverLength: declared, sourceLength: length)
            }
        }
        // Skip forward (plain streams cannot seek): read and drop, before the buffers may exist.
        if streamOffset < offset {
            let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
            defer { scratch.deallocate() }
            while streamOffset < offset {
                let wanted = Int(min(offset - streamOffset, Int64(scratch.count)))
                _ = try read(into: UnsafeMutableRawBufferPointer(rebasing: scratch[0..<wanted]), expectedLength: total)
            }
        }
    }


    /// One read into `slot` (or, when `filling`, reads until it is full); returns the count
    /// (more than zero), or throws. Less than a full slot is returned only for live data whose
    /// end has not been seen: its end.
    func read(into slot: UnsafeMutableRawBufferPointer, expectedLength: Int64?, filling: Bool = false) throws(BlobUploadError) -> Int {
        guard let stream, slot.baseAddress != nil else { throw .source(.notOpen) }
        let interrupter = self.interrupter
        let endIsData = total == nil && source.isLive
        do {
            let count = filling
                ? try BodyReading.fill(
                    slot, from: stream, at: streamOffset, source: source, expectedLength: expectedLength, endIsData: endIsData,
                    isCancelled: { interrupter.isInterrupted })
                : try BodyReading.read(
                    stream, into: slot, at: streamOffset, source: source, expectedLength: expectedLength, endIsData: endIsData,
                    isCancelled: { interrupter.isInterrupted })
            streamOffset += Int64(count)
            return count
        } catch {
            // A cancelled read leaves the stream to the caller's close.
            if error != .cancelled { closeStream() }
            throw error
        }
    }

    func closeStream() {
        stream?.close()
        stream = nil
        interrupter.watch(nil)
    }
}
