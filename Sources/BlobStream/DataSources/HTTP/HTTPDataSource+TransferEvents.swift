import Foundation
internal import HTTP1

/// How the read-ahead reacts to its transfer: checks each response against the pinned version,
/// fills the buffer, follows redirects (of either transport), and reconnects after failures.
/// Events of any transfer but the current one are refused.
extension HTTPDataSource: HTTPTransferSink {

    func transfer(_ id: Int, didReceive head: HTTPResponseHead) -> Bool {
        transition { s, effects in
            guard var transfer = s.transfer, transfer.id == id else { return false }
            let interpretation = HTTPRangeResponse.interpret(
                head, for: transfer.request, pinned: s.pinHasLengthOnly ? nil : s.pinnedVersion,
                knownLength: s.knownLength, resource: resourceName)
            let response: HTTPRangeResponse
            switch interpretation {
            case .failure(.httpStatus(_, let code, _)):
                if let retry = HTTPTransferFailure.transient(status: code, retryAfter: head["retry-after"], date: head["date"]),
                   retriesRemain(s) {
                    cancelTransfer(&s, &effects)
                    retryOrFail(retry, &s, &effects)
                    return false
                }
                if head["content-length"] == "0" {
                    fail(.httpStatus(url: statusResource(in: s), statusCode: code), &s, &effects)
                    return false
                }
                // The last answer's body says why (S3's error document): read its start for the message.
                transfer.receivedHead = true
                transfer.errorBody = ErrorBody(statusCode: code, contentType: head["content-type"])
                s.transfer = transfer
                effects.errorBodyStarted = transfer.id
                return true
            case .failure(let error):
                fail(error, &s, &effects)
                return false
            case .success(let success):
                response = success
            }
            if s.pinned == nil || (s.pinHasLengthOnly && !response.isEndOfBlob) {
                s.pinned = BlobSourceDescription(length: s.pinned?.length ?? response.length, version: response.version.token)
                s.pinnedVersion = response.version
                s.pinHasLengthOnly = response.isEndOfBlob && response.version.token == nil
            }
            if s.knownLength == nil { s.knownLength = response.length }
            if let completion = s.pendingOpen, let pinned = s.pinned {
                effects.open = (completion, .success(pinned))
                s.pendingOpen = nil
            }
            if response.isEndOfBlob {
                s.transfer = nil
                s.endOfData = true
                wakeReader(&s, &effects)
                return false
            }
            transfer.receivedHead = true
            transfer.skip = response.skip
            transfer.bodyEnd = response.bodyEnd
            transfer.declaresBodyEnd = response.declaresBodyEnd
            transfer.ignoresRange = response.ignoresRange
            s.transfer = transfer
            return true
        }
    }

    func transferSpace(_ id: Int, inPlace: Bool) -> HTTPTransferSpace {
        state.withLock { s in
            guard var transfer = s.transfer, transfer.id == id, let buffer = s.buffer else { return .stop }
            if let body = transfer.errorBody { return .bytes(max(1, HTTPErrorMessage.maxBodyBytes - body.bytes.count)) }
            if buffer.freeCount > 0 {
                // Bytes to skip (a server that ignores Range) go through a copy that drops them.
                guard inPlace, transfer.skip == 0, let loan = buffer.lend(limit: SocketHTTPTransfer.receiveLimit) else {
                    return .bytes(buffer.freeCount)
                }
                return .loan(loan)
            }
            let semaphore = transfer.spaceWaiter ?? DispatchSemaphore(value: 0)
            transfer.spaceWaiter = semaphore
            s.transfer = transfer
            return .wait(semaphore)
        }
    }

    func transfer(_ id: Int, received count: Int, into loan: ReadAheadBuffer.Loan) -> Bool {
        transition { s, effects in
            // A buffer the source replaced (the transfer was cancelled) is left to the loan.
            guard s.buffer === loan.buffer else { return false }
            guard let transfer = s.transfer, transfer.id == id, count > 0 else {
                loan.buffer.settle(loan, keeping: 0)
                return false
            }
            s.statistics.bytesReceived += Int64(count)
            let kept = allowance(count, for: transfer, s)
            loan.buffer.settle(loan, keeping: kept)
            return accepted(kept, of: count, &s, &effects)
        }
    }

    func transfer(_ id: Int, didReceive bytes: UnsafeRawBufferPointer) -> Bool {
        transition { s, effects in
            guard var transfer = s.transfer, transfer.id == id, let buffer = s.buffer else { return false }
            if var body = transfer.errorBody {
                body.bytes += bytes.prefix(HTTPErrorMessage.maxBodyBytes - body.bytes.count)
                guard !body.isComplete else {
                    fail(statusError(body, in: s), &s, &effects)
                    return false
                }
                transfer.errorBody = body
                s.transfer = transfer
                return true
            }
            s.statistics.bytesReceived += Int64(bytes.count)
            let skipped = Int(min(transfer.skip, Int64(bytes.count)))
            transfer.skip -= Int64(skipped)
            s.transfer = transfer
            let input = UnsafeRawBufferPointer(rebasing: bytes[skipped...])
            guard !input.isEmpty else { return true }
            let written = buffer.write(UnsafeRawBufferPointer(rebasing: input.prefix(allowance(input.count, for: transfer, s))))
            return accepted(written, of: input.count, &s, &effects)
        }
    }

    /// How many of `count` bytes arriving at the frontier belong to what `transfer` asked for
    /// and to its response's body.
    private func allowance(_ count: Int, for transfer: ActiveTransfer, _ s: State) -> Int {
        var allowed = Int64(count)
        if let end = transfer.request.end { allowed = min(allowed, end - s.frontier) }
        if let end = transfer.bodyEnd { allowed = min(allowed, end - s.frontier) }
        return Int(max(0, allowed))
    }

    /// Wakes the reader for `written` new bytes of the `delivered` ones; when some did not fit
    /// the request, stops the transfer, and when some go past the body's end (declared, or the
    /// blob's known length), fails. Returns whether it should go on.
    private func accepted(_ written: Int, of delivered: Int, _ s: inout State, _ effects: inout Effects) -> Bool {
        if written > 0 {
            s.consecutiveFailures = 0
            wakeReader(&s, &effects)
        }
        guard written < delivered, let transfer = s.transfer else { return true }
        if let end = transfer.bodyEnd, s.frontier >= end {
            // Cutting the excess off would pass a body of another length for the right one
            // (and a transfer asked again at the end would get the same excess, forever).
            fail(transfer.declaresBodyEnd
                    ? .protocolViolation(url: resourceName, reason: "the body goes on past its declared end, the byte before offset \(end)")
                    : .sourceChanged(resource: resourceName, offset: end, reason: "another version: the length was \(end) bytes and the body goes on past it"),
                 &s, &effects)
            return false
        }
        if transfer.usesURLSession && transfer.ignoresRange {
            fail(.sourceFailed(
                resource: resourceName,
                reason: "the server ignores Range requests, and URLSession cannot pause a download, so this blob cannot be read in bounded memory over URLSession; use the socket transport (http:) or a server that supports ranges"),
                 &s, &effects)
        } else {
            // The transfer delivered what was asked for; the next one starts when there is room.
            cancelTransfer(&s, &effects)
            resumeIfNeeded(&s, &effects)
        }
        return false
    }

    func transfer(_ id: Int, redirectedTo location: String, statusCode: Int) {
        transition { s, effects in
            guard let transfer = s.transfer, transfer.id == id else { return }
            s.transfer = nil
            let next = HTTPRedirectPolicy.download.next(
                method: "GET", url: transfer.request.url, hasBody: false, status: statusCode, location: location,
                followed: transfer.redirects)
            switch next {
            case .success(let follow)?:
                startTransfer(transfer.request.redirected(to: follow.url), redirects: transfer.redirects + 1, &s, &effects)
            case .failure(.tooMany(_, let limit))?:
                fail(.network(url: resourceName, reason: "more than \(limit) redirects, the last to \(location)"), &s, &effects)
            case .failure(let refusal)?:
                fail(.unsupportedURL(url: refusal.location, reason: "\(resourceName) answered \(statusCode): \(refusal.reason)"), &s, &effects)
            case nil:
                fail(.sourceFailed(resource: resourceName, reason: "the transfer reported a redirect (\(statusCode)) without one"), &s, &effects)
            }
        }
    }

    func transfer(_ id: Int, didFinishWith failure: HTTPTransferFailure?) {
        transition { s, effects in
            guard let transfer = s.transfer, transfer.id == id else { return }
            s.transfer = nil
            if let body = transfer.errorBody {
                // What arrived of the body is the message, whether or not all of it did.
                fail(statusError(body, in: s), &s, &effects)
                return
            }
            if let failure {
                if failure.isRetryable {
                    retryOrFail(failure, &s, &effects)
                } else {
                    fail(error(for: failure, at: s.frontier, attempts: 1, in: s), &s, &effects)
                }
                return
            }
            guard transfer.receivedHead else {
                fail(.sourceFailed(resource: resourceName, reason: "the transfer ended without a response"), &s, &effects)
                return
            }
            if transfer.skip > 0 && transfer.bodyEnd == nil {
                // A whole blob of unknown length that ended before the wanted offset.
                let length = transfer.request.first - transfer.skip
                fail(.invalidOffset(resource: url.absoluteString, offset: transfer.request.first, length: length), &s, &effects)
                return
            }
            if transfer.skip > 0 || (transfer.bodyEnd.map { s.frontier < $0 } ?? false) {
                let end = transfer.bodyEnd.map { "offset \($0)" } ?? "the end"
                retryOrFail(.connection(reason: "the body stopped short of \(end)"), &s, &effects)
                return
            }
            if transfer.bodyEnd == nil { s.knownLength = s.frontier }
            if let length = s.knownLength, s.frontier >= length { s.endOfData = true }
            wakeReader(&s, &effects)
            resumeIfNeeded(&s, &effects)
        }
    }

    /// Fails with the status of an error body still arriving: what came is its message, even
    /// while the body stalls (its transfer would wait out the idle time-out).
    func errorBodyTimeUp(transfer id: Int) {
        transition { s, effects in
            guard let transfer = s.transfer, transfer.id == id, let body = transfer.errorBody else { return }
            fail(statusError(body, in: s), &s, &effects)
        }
    }

    /// The status error for `body`, with what it says.
    private func statusError(_ body: ErrorBody, in s: State) -> BlobStreamError {
        .httpStatus(
            url: statusResource(in: s), statusCode: body.statusCode,
            message: HTTPErrorMessage.message(of: body.bytes, contentType: body.contentType, statusCode: body.statusCode))
    }
}
