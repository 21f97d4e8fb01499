import Foundation

/// Finds the payload of an HTTP/1.1 response body in the bytes read from the connection,
/// whatever its framing: a `Content-Length`, chunked transfer coding, or "until the server
/// closes". Knowing where the body ends is what tells a complete body from a dropped connection,
/// and where the next answer on a kept-alive connection begins.
package struct HTTPBodyDecoder {
    private enum Framing {
        case length(remaining: Int64)
        case untilClose
        case chunked(ChunkState)
    }

    private enum ChunkState {
        /// Reading the hexadecimal size line (extensions after `;` ignored).
        case size(digits: [UInt8])
        /// Copying the chunk's payload.
        case data(remaining: Int64)
        /// Expecting the CRLF after a chunk's payload (`seen` of its two bytes so far).
        case dataEnd(seen: Int)
        /// Reading trailer lines after the last chunk until an empty one (`total` counts every
        /// trailer byte so far, bounded like a head; `lineLength` counts the
        /// bytes of the current line other than CR).
        case trailer(lineLength: Int, total: Int)
    }

    private var framing: Framing
    /// Whether the whole body has been seen.
    package private(set) var isComplete = false
    /// Payload bytes decoded so far, for messages that name where a body broke off.
    package private(set) var payloadBytes: Int64 = 0

    /// A decoder for the body of the answer `head` to a request with `method`.
    /// - Throws: ``HTTP1Error/protocolViolation(reason:)`` when the head's framing is unusable
    ///   (``HTTPResponseHead/framingViolation``): guessing would risk a cut body taken for whole.
    package init(for head: HTTPResponseHead, method: String = "GET") throws(HTTP1Error) {
        if method == "HEAD" || head.statusCode == 204 || head.statusCode == 304 || (100...199).contains(head.statusCode) {
            // RFC 9112 §6.3: these answers have no body, whatever their fields say.
            framing = .length(remaining: 0)
            isComplete = true
            return
        }
        if let violation = head.framingViolation { throw .protocolViolation(reason: violation) }
        if head.isChunked {
            framing = .chunked(.size(digits: []))
        } else if let length = head.contentLength {
            framing = .length(remaining: length)
            isComplete = length == 0
        } else {
            framing = .untilClose
        }
    }

    /// Whether every body byte is payload (a `Content-Length` or close-delimited body, not
    /// chunked): then ``decode(_:emit:)`` emits input from its first byte, in place, so a
    /// receive can go straight to where the payload is kept.
    package var passesBytesThrough: Bool {
        if case .chunked = framing { return false }
        return true
    }

    /// Whether the end of the connection is the end of the body (no length was given).
    package var endsAtClose: Bool {
        if case .untilClose = framing { return true }
        return false
    }

    /// Decodes `input`, passing each run of payload bytes to `emit`, which returns whether to
    /// go on. Returns how many bytes of `input` belong to the body (the rest, after its end,
    /// begin the next answer), and whether `emit` asked to stop.
    package mutating func decode(
        _ input: UnsafeRawBufferPointer,
        emit: (UnsafeRawBufferPointer) -> Bool
    ) throws(HTTP1Error) -> (consumed: Int, stopped: Bool) {
        var index = 0
        while index < input.count && !isComplete {
            let run: Int
            switch framing {
            case .untilClose:
                run = input.count - index
            case .length(let remaining):
                run = Int(min(Int64(input.count - index), remaining))
                framing = .length(remaining: remaining - Int64(run))
                isComplete = remaining == Int64(run)
            case .chunked(.data(let remaining)):
                run = Int(min(Int64(input.count - index), remaining))
                framing = .chunked(remaining == Int64(run) ? .dataEnd(seen: 0) : .data(remaining: remaining - Int64(run)))
            case .chunked(let state):
                try step(state, byte: input[index])
                index += 1
                continue
            }
            payloadBytes += Int64(run)
            let payload = UnsafeRawBufferPointer(rebasing: input[index..<index + run])
            index += run
            if !emit(payload) { return (index, true) }
        }
        return (index, false)
    }

    /// Advances the chunk framing (outside payload runs) by one byte.
    private mutating func step(_ state: ChunkState, byte: UInt8) throws(HTTP1Error) {
        switch state {
        case .size(var digits):
            guard byte == UInt8(ascii: "\n") else {
                guard digits.count < 1024 else { throw Self.malformed("a chunk size line is too long") }
                digits.append(byte)
                framing = .chunked(.size(digits: digits))
                return
            }
            let line = String(decoding: digits, as: UTF8.self)
            let sizeText = line.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]
                .trimmingCharacters(in: CharacterSet(charactersIn: " \t\r"))
            // Hex digits only: `Int64(_:radix:)` would take a sign ("-0" ends the body early).
            let isHex = !sizeText.isEmpty && sizeText.utf8.allSatisfy { Self.hexDigits.contains($0) }
            guard isHex, let size = Int64(sizeText, radix: 16) else {
                throw Self.malformed("the chunk size \"\(sizeText.prefix(40))\" is not a hexadecimal number that fits in 63 bits")
            }
            framing = .chunked(size == 0 ? .trailer(lineLength: 0, total: 0) : .data(remaining: size))
        case .dataEnd(let seen):
            let expected = seen == 0 ? UInt8(ascii: "\r") : UInt8(ascii: "\n")
            guard byte == expected else {
                throw Self.malformed("chunk data ending at payload byte \(payloadBytes) is not followed by CRLF")
            }
            framing = .chunked(seen == 0 ? .dataEnd(seen: 1) : .size(digits: []))
        case .trailer(_, let total) where total >= HTTPResponseHead.maxHeadBytes:
            // A peer that sends trailer lines without end would otherwise hold the reader for good.
            throw Self.malformed("the trailer is longer than \(HTTPResponseHead.maxHeadBytes) bytes")
        case .trailer(let lineLength, let total) where byte == UInt8(ascii: "\n"):
            if lineLength == 0 {
                isComplete = true
            } else {
                framing = .chunked(.trailer(lineLength: 0, total: total + 1))
            }
        case .trailer(let lineLength, let total):
            framing = .chunked(.trailer(lineLength: byte == UInt8(ascii: "\r") ? lineLength : lineLength + 1, total: total + 1))
        case .data:
            break
        }
    }

    private static let hexDigits = Set("0123456789abcdefABCDEF".utf8)

    private static func malformed(_ reason: String) -> HTTP1Error {
        .protocolViolation(reason: "malformed chunked body: \(reason)")
    }
}
