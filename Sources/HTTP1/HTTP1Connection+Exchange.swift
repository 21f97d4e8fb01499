import Foundation

extension HTTP1Connection {
    /// Sends a request (`head`, then `body`) and reads its answer, keeping at most `limit`
    /// bytes of its body (see ``readAnswer(method:wait:keepingAtMost:failingPastLimit:)``).
    ///
    /// A server may refuse a request before it has read the whole body (413, 401, 409, 403)
    /// and close the connection, which breaks the send: its answer, when one came, says more
    /// than the broken pipe, and is returned, never reusable. But only a refusal (3xx and up)
    /// is: a success read after a failed send cannot confirm bytes that were never sent, so the
    /// send's error stands then. A send that timed out has a peer that stopped reading, not one
    /// that closed: no answer is waited for.
    ///
    /// Two waits: `sending` for the request (a ``HTTP1Wait/pace(_:)`` for a bulk body), and a
    /// whole-answer deadline, `answerTimeout` seconds from the end of the request, for the
    /// answer (head and body): a peer that answers one byte at a time cannot stretch it.
    /// `meter` paces and observes the body, its observer told running totals from 0
    /// (``HTTP1Meter/perAttempt()``).
    package func exchange(
        method: String, head: [UInt8], body: UnsafeRawBufferPointer?, sending: HTTP1Wait, answerTimeout: TimeInterval,
        keepingAtMost limit: Int, failingPastLimit: Bool = false, meter: HTTP1Meter? = nil
    ) throws(HTTP1Error) -> HTTP1Answer {
        try exchange(method: method, head: head, sending: sending, answerTimeout: answerTimeout, keepingAtMost: limit,
                     failingPastLimit: failingPastLimit) { () throws(HTTP1Error) in
            if let body, !body.isEmpty { try send(body, wait: sending, meter: meter?.perAttempt()) }
        }
    }

    /// The same exchange with a body read while it is sent (``HTTP1ProducedBody``). A producer
    /// that stops ends the request with ``HTTP1Error/cancelled``: the connection is closed,
    /// never reused nor resent on, and the producer's owner knows why it stopped.
    package func exchange(
        method: String, head: [UInt8], producing body: HTTP1ProducedBody, sending: HTTP1Wait, answerTimeout: TimeInterval,
        keepingAtMost limit: Int, meter: HTTP1Meter? = nil
    ) throws(HTTP1Error) -> HTTP1Answer {
        try exchange(method: method, head: head, sending: sending, answerTimeout: answerTimeout, keepingAtMost: limit,
                     failingPastLimit: false) { () throws(HTTP1Error) in
            guard try send(body, wait: sending, meter: meter?.perAttempt()) else { throw .cancelled }
        }
    }

    private func exchange(
        method: String, head: [UInt8], sending: HTTP1Wait, answerTimeout: TimeInterval, keepingAtMost limit: Int,
        failingPastLimit: Bool, sendBody: () throws(HTTP1Error) -> Void
    ) throws(HTTP1Error) -> HTTP1Answer {
        do {
            try send(head, wait: sending)
            try sendBody()
        } catch {
            guard case .network = error,
                  let refusal = earlyRefusal(
                    method: method, wait: .after(answerTimeout), keepingAtMost: limit, failingPastLimit: failingPastLimit) else {
                throw error
            }
            return refusal
        }
        return try readAnswer(method: method, wait: .after(answerTimeout), keepingAtMost: limit, failingPastLimit: failingPastLimit)
    }

    /// The answer a server sent before the whole request went out, if it is a refusal (3xx and
    /// up), never reusable; `nil` for none, or for a success, which cannot confirm a body the
    /// server had not seen the end of. Every sender that stops early asks it.
    package func earlyRefusal(
        method: String, wait: HTTP1Wait, keepingAtMost limit: Int, failingPastLimit: Bool = false, after received: [UInt8] = []
    ) -> HTTP1Answer? {
        guard var answer = try? readAnswer(
                method: method, wait: wait, keepingAtMost: limit, failingPastLimit: failingPastLimit, after: received),
              answer.head.statusCode >= 300 else { return nil }
        answer.reusable = false
        return answer
    }
}
