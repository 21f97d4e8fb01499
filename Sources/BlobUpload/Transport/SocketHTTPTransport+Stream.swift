import BlobStream
import Foundation
internal import HTTP1

/// A stream body over the socket transport, for ``StreamedUploader``: read on a thread of its
/// own, each read one `send` straight from the buffer it was read into (one chunk of the
/// chunked coding when the length is unknown).
///
/// Why not URLSession: FoundationNetworking reads a stream body 64 KiB at a time on the one
/// serial queue every URLSession of the process shares, and hands each piece to libcurl
/// through dispatch sources and queue hops; here a 1 MiB read is one `pread` and one `send`.
///
/// A known length goes out as `Content-Length` (servers such as S3's presigned PUTs refuse
/// chunked bodies), an unknown one chunked. Either way the bytes that complete the body for
/// the server (the last byte, the last chunk; for an empty body the head, once its end is
/// confirmed) go out only after the stream reported its end, without an error, at the
/// expected length. A failing, short or long stream, or a cancelled upload, closes the
/// connection before them: the server is never left with a body that looks whole.
extension SocketHTTPTransport {
    /// The most body bytes read, and sent, at once.
    static let streamChunkSize = 1 << 20

    /// Sends `head` with `body`, read to its end, and reads the answer. The
    /// stream must not be open; it is opened here, before anything is sent, and left open (at
    /// its end, or failed), so its caller can tell how far it got. A 3xx answer is refused: the
    /// body cannot be sent again.
    /// - Parameter expectedLength: When given, a stream that yields more or fewer bytes fails
    ///   with ``BlobStreamError/unexpectedEnd(resource:offset:expectedLength:)`` and the body
    ///   is not completed. When `nil`, a ``MeasuredStream`` that knows its length once open (a
    ///   URL's, an asset's) gives what it has left to read.
    /// - Throws: ``BlobUploadError/network(method:url:reason:code:)`` (also when the stream
    ///   failed: the stream's own error tells why),
    ///   ``BlobUploadError/protocolViolation(operation:url:reason:)``,
    ///   ``BlobUploadError/redirectRefused(method:url:statusCode:location:)``,
    ///   ``BlobUploadError/source(_:)`` for another length than `expectedLength`,
    ///   ``BlobUploadError/cancelled``. Other statuses are returned, not thrown.
    func send(_ head: HTTPRequestHead, streaming body: InputStream, expectedLength: Int64?) async throws(BlobUploadError) -> HTTPReply {
        let call = HTTP1Cancellation()
        let stream = StreamBody(body)
        // A thread of its own: a stream read may wait (a remote source), and uploads of one
        // uploader run side by side.
        return try await withBlockingWork(at: .newThread("BlobUpload streamed \(head.method)")) {
            // Cancelled first, so a read that the close ends is never taken for the body's end.
            call.cancel()
            stream.interrupt()
        } _: {
            self.performStreaming(head, body: stream, expectedLength: expectedLength, call: call)
        }.get()
    }

    private func performStreaming(
        _ head: HTTPRequestHead, body: StreamBody, expectedLength: Int64?, call: HTTP1Cancellation
    ) -> Result<HTTPReply, BlobUploadError> {
        let (method, url) = (head.method, head.url)
        guard let endpoint = head.endpoint else {
            return .failure(.network(
                method: method, url: url.absoluteString, reason: "not an http: or https: URL with a host and a port from 1 to 65535",
                code: URLError.Code.unsupportedURL.rawValue))
        }
        // Opened before the connection: a source that cannot open fails with nothing sent.
        let stream = body.stream
        stream.open()
        if stream.streamStatus == .error { return .failure(BodyStop.streamFailed(sent: 0).error(method: method, url: url, progress: nil, limit: timeout)) }
        var head = head
        // `nil`: chunked (see the type's discussion).
        let length = expectedLength ?? stream.knownRemainingLength
        head.contentLength = length.map(Int.init)
        head.isChunked = length == nil
        head.closeAfterAnswer = true
        let connection = HTTP1Connection()
        guard call.watch(connection) else { return .failure(.cancelled) }
        // Closed when the request ends, however: the call may outlive it (it is freed once the task resumes).
        defer {
            call.unwatch(connection)
            connection.close()
        }
        do {
            try connection.connect(to: endpoint, trust: trust, wait: .after(timeout))
        } catch {
            return .failure(call.isCancelled ? .cancelled : Self.uploadError(error, in: .http(method: method), method: method, url: url, progress: connection.progress(), limit: timeout))
        }
        // Bytes of the answer read while the body went out (``HTTP1Connection/answerBegan(carrying:wait:)``).
        var received: [UInt8] = []
        do throws(BodyStop) {
            try sendRequest(head.serialized(), body: stream, length: length, on: connection, wait: sending, call: call, received: &received)
        } catch {
            if call.isCancelled { return .failure(.cancelled) }
            // A server may answer before it read the whole body (413, 401) and close the
            // connection, which breaks the send: its answer says more than the broken pipe.
            if error.mayHaveAnswer,
               let refusal = connection.earlyRefusal(
                   method: method, wait: .after(timeout), keepingAtMost: HTTPReply.maxKeptBody, after: received) {
                return reply(to: refusal, method: method, url: url)
            }
            // An answer began before the last chunk, and it is no refusal: nothing confirms the
            // body, whatever the stream has read.
            if case .answeredEarly(let sent) = error {
                guard !received.isEmpty else {
                    return .failure(.network(
                        method: method, url: url.absoluteString,
                        reason: "the server closed the connection after \(sent) bytes of the body, without an answer",
                        code: URLError.Code.networkConnectionLost.rawValue))
                }
                return .failure(.bodyIncomplete(method: method, url: url.absoluteString, bytesSent: sent, expectedLength: expectedLength))
            }
            return .failure(error.error(method: method, url: url, progress: connection.progress(), limit: timeout))
        }
        do {
            // The whole answer within the time-out: a trickle cannot stretch it.
            let answer = try connection.readAnswer(
                method: method, wait: .after(timeout), keepingAtMost: HTTPReply.maxKeptBody, after: received)
            return reply(to: answer, method: method, url: url)
        } catch {
            return .failure(call.isCancelled ? .cancelled : Self.uploadError(error, in: .http(method: method), method: method, url: url, progress: connection.progress(), limit: timeout))
        }
    }

    private func reply(to answer: HTTP1Answer, method: String, url: URL) -> Result<HTTPReply, BlobUploadError> {
        let reply = HTTPReply(method: method, url: url, statusCode: answer.head.statusCode,
                              headers: answer.head.fields, body: Data(answer.body))
        // A streamed body is never sent again: any redirect is refused.
        if case .failure(let refusal)? = reply.redirect(hasBody: true, followed: 0, operation: .http(method: reply.method)) { return .failure(refusal) }
        return .success(reply)
    }

    /// Sends `head`, then reads `body` to its end, sending each read as it came (one chunk
    /// each when chunked, for a `nil` length); the bytes that complete the body for the server
    /// (the last chunk, or the last byte of the length) go out only after the stream ended
    /// cleanly at the expected length.
    private func sendRequest(
        _ head: [UInt8], body stream: InputStream, length expectedLength: Int64?, on connection: HTTP1Connection, wait: HTTP1Wait,
        call: HTTP1Cancellation, received: inout [UInt8]
    ) throws(BodyStop) {
        /// Whether a final answer began (interim ones are dropped), its bytes kept in `received`.
        func answered() throws(BodyStop) -> Bool {
            do {
                return try connection.answerBegan(carrying: &received, wait: .after(timeout))
            } catch {
                throw .transfer(error)
            }
        }
        let buffer = HTTPChunkBuffer(capacity: Self.streamChunkSize)
        let payload = buffer.payload
        if expectedLength == 0 {
            // The head alone completes an empty body: its end first, then the head.
            let count = stream.read(payload.baseAddress!.assumingMemoryBound(to: UInt8.self), maxLength: payload.count)
            if call.isCancelled { throw .transfer(.cancelled) }
            if count < 0 || stream.streamStatus == .error { throw .streamFailed(sent: 0) }
            // A 0 at the expected length is the end, as in the loop below.
            if count > 0 { throw .length(sent: Int64(count), expected: 0) }
        }
        do {
            try connection.send(head, wait: wait)
        } catch {
            throw .transfer(error)
        }
        if expectedLength == 0 { return }
        let meter = meter(observing: nil)
        var sent: Int64 = 0
        var lastByte: UInt8?
        while true {
            // An answer before the whole body went out (a 201, a 413) ends the request: the
            // rest is not read, so the caller sees that the body was not sent to its end.
            if sent > 0, try answered() { throw .answeredEarly(sent: sent) }
            let count = stream.read(payload.baseAddress!.assumingMemoryBound(to: UInt8.self), maxLength: payload.count)
            if call.isCancelled { throw .transfer(.cancelled) }
            if count < 0 || stream.streamStatus == .error { throw .streamFailed(sent: sent) }
            if count == 0 {
                // Only the end may end the body: a 0 from a stream that still says it has bytes
                // would complete a short body (the expected length, when given, is checked below).
                guard stream.saysItEnded || sent == expectedLength else { throw .noEnd(sent: sent, status: stream.streamStatus) }
                break
            }
            sent += Int64(count)
            if let expectedLength, sent > expectedLength { throw .length(sent: sent, expected: expectedLength) }
            do {
                if expectedLength == nil {
                    try connection.send(buffer.frame(count), wait: wait, meter: meter)
                } else {
                    // The declared length's last byte waits for the stream's clean end.
                    let held = sent == expectedLength ? 1 : 0
                    if held == 1 { lastByte = payload[count - 1] }
                    if count > held {
                        try connection.send(UnsafeRawBufferPointer(rebasing: payload.prefix(count - held)), wait: wait, meter: meter)
                    }
                }
            } catch {
                throw .transfer(error)
            }
        }
        if let expectedLength, sent != expectedLength { throw .length(sent: sent, expected: expectedLength) }
        // An answer that came while the stream was read to its end came before the end of the
        // body: the same early answer as one seen between two chunks.
        if try answered() { throw .answeredEarly(sent: sent) }
        do {
            if let lastByte {
                payload[0] = lastByte
                try connection.send(UnsafeRawBufferPointer(rebasing: payload.prefix(1)), wait: wait, meter: meter)
            } else {
                try connection.send(HTTPChunkBuffer.lastChunk, wait: wait)
            }
        } catch {
            throw .transfer(error)
        }
    }
}

/// Why a stream body stopped before the bytes that complete it.
private enum BodyStop: Error {
    /// The connection failed or was cancelled.
    case transfer(HTTP1Error)
    /// The stream reported an error after `sent` bytes; the stream's own error says which.
    case streamFailed(sent: Int64)
    /// The stream yielded another length than expected.
    case length(sent: Int64, expected: Int64)
    /// The server began to answer (or closed: no answer bytes were received) before the whole
    /// body was sent.
    case answeredEarly(sent: Int64)
    /// The stream's read gave no bytes although it is not at its end (it says it has bytes).
    case noEnd(sent: Int64, status: Stream.Status)

    /// Whether the server may have answered: it broke the connection, or began an answer.
    var mayHaveAnswer: Bool {
        switch self {
        case .transfer(.network), .answeredEarly: true
        default: false
        }
    }

    func error(method: String, url: URL, progress: HTTP1Progress?, limit: TimeInterval) -> BlobUploadError {
        switch self {
        case .transfer(let error):
            SocketHTTPTransport.uploadError(error, in: .http(method: method), method: method, url: url, progress: progress, limit: limit)
        case .streamFailed(let sent):
            // The uploader reports the stream's own error instead when it has one.
            .source(.sourceFailed(
                resource: "body of \(url.absoluteString)",
                reason: "a read failed after \(sent) bytes; the body was not completed"))
        case .noEnd(let sent, let status):
            .source(.sourceFailed(
                resource: "body of \(url.absoluteString)",
                reason: "a read gave 0 bytes after \(sent) although the stream says it has more (status \(status.rawValue)); "
                    + "the body was not completed"))
        case .answeredEarly:
            .network(method: method, url: url.absoluteString, reason: "the server closed the connection before the whole body was sent", code: URLError.Code.networkConnectionLost.rawValue)
        case .length(let sent, let expected):
            .source(.unexpectedEnd(resource: "body of \(url.absoluteString)", offset: sent, expectedLength: expected))
        }
    }
}

/// The body stream, handed to the thread that reads it; only that thread reads it, and
/// another thread only closes it to end a waiting read, when the stream allows that.
private final class StreamBody: @unchecked Sendable {
    let stream: InputStream
    private let interrupter: Interrupter

    init(_ stream: InputStream) {
        self.stream = stream
        interrupter = Interrupter(watching: stream)
    }

    /// Ends a read that waits, for a cancelled upload (see ``Interrupter``).
    func interrupt() {
        interrupter.interrupt()
    }
}
