import Foundation

/// A request body read while it is sent: `length` bytes that `read` yields in order, in pieces
/// of half of `buffer` at most. One thread reads a piece and sends it while it is still in
/// cache, and reads the next piece into the other half while the socket cannot take more, so
/// reading overlaps sending without a second thread or a buffer of the whole body (README,
/// "Streamed tus chunks").
package struct HTTP1ProducedBody {
    /// The body's byte count, sent as `Content-Length`.
    package var length: Int
    /// Where the pieces are read, the caller's (reused from request to request, so a sender
    /// on any thread allocates nothing); untouched once the send returns. At least 1 byte
    /// (an empty one sends nothing and returns `false`); with 1, no piece is read ahead.
    package var buffer: UnsafeMutableRawBufferPointer
    /// Writes the body's next bytes into the buffer (at most its count) and returns how many.
    /// 0 or less: the producer failed (it keeps why), and the body stops short.
    package var read: (UnsafeMutableRawBufferPointer) -> Int

    package init(length: Int, buffer: UnsafeMutableRawBufferPointer, read: @escaping (UnsafeMutableRawBufferPointer) -> Int) {
        self.length = max(0, length)
        self.buffer = buffer
        self.read = read
    }
}

extension HTTP1Connection {
    /// Sends all of `body` within `wait`, paced and observed by `meter` as a body in memory is
    /// (a rate limit paces each slice of ``HTTP1Meter/slice``; an observer hears of each slice
    /// written). Returns `false` when the producer stopped before `length`: the request is then
    /// incomplete, and the connection must go.
    package func send(_ body: HTTP1ProducedBody, wait: HTTP1Wait, meter: HTTP1Meter?) throws(HTTP1Error) -> Bool {
        guard body.length > 0 else { return true }
        guard !body.buffer.isEmpty else { return false }
        let (fd, channel) = try connected()
        // A buffer of one byte has no second half: no read ahead then.
        let halves = body.buffer.count >= 2
        let piece = min(halves ? body.buffer.count / 2 : 1, body.length, meter?.reserve != nil ? meter?.slice ?? .max : .max)
        let first = UnsafeMutableRawBufferPointer(rebasing: body.buffer[0..<piece])
        let buffers = [first, halves ? UnsafeMutableRawBufferPointer(rebasing: body.buffer[piece..<2 * piece]) : first]
        var filled = [0, 0]
        var produced = 0
        /// Reads the next piece into buffer `index`; false when the producer failed.
        func readPiece(into index: Int) -> Bool {
            let wanted = min(piece, body.length - produced)
            let count = body.read(UnsafeMutableRawBufferPointer(rebasing: buffers[index][0..<wanted]))
            guard count > 0 else { return false }
            filled[index] = min(count, wanted)
            produced += filled[index]
            return true
        }
        let clock = HTTP1WaitClock(wait)
        defer { clock.end() }
        // An observer hears of each slice once it is all written, as for a body in memory.
        let slice = meter?.slice ?? .max
        var current = 0
        var sent = 0
        var sliceStart = 0
        /// Waits what a rate limit asks before the piece in buffer `index`, off the pace's clock.
        func paceBefore(_ index: Int) throws(HTTP1Error) {
            guard let reserve = meter?.reserve else { return }
            try clock.off { () throws(HTTP1Error) in try pause(nanoseconds: reserve(filled[index])) }
        }
        guard readPiece(into: current) else { return false }
        try paceBefore(current)
        while true {
            let next = 1 - current
            if sent == filled[current] {
                if filled[next] == 0 {
                    if produced == body.length { return true }
                    guard readPiece(into: next) else { return false }
                }
                filled[current] = 0
                current = next
                sent = 0
                sliceStart = 0
                try paceBefore(current)
                continue
            }
            try checkCancelled()
            let sliceEnd = sliceStart + min(slice, filled[current] - sliceStart)
            switch try channel.send(UnsafeRawBufferPointer(rebasing: buffers[current][sent..<sliceEnd]), on: fd) {
            case .done(let count):
                sent += count
                sentTotal.add(count, ordering: .relaxed)
                try clock.progress(count)
                if sent == sliceEnd {
                    meter?.observe?(sent - sliceStart)
                    sliceStart = sent
                }
            case .wait(let event):
                // The socket is full: read ahead now, then wait (the same bytes go again: TLS
                // may hold records of them).
                if halves, filled[next] == 0, produced < body.length {
                    guard readPiece(into: next) else { return false }
                    continue
                }
                try self.wait(for: event, on: fd, clock: clock)
            case .closed:
                throw .network(reason: "send: the connection closed", cause: .lost)
            }
        }
    }
}
