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
    package func exchange(
        method: String, head: [UInt8], body: UnsafeRawBufferPointer?, wait: HTTP1Wait,
        keepingAtMost limit: Int, failingPastLimit: Bool = false
    ) throws(HTTP1Error) -> HTTP1Answer {
        do {
            try send(head, wait: wait)
            if let body, !body.isEmpty {
                try send(body, wait: wait)
            }
        } catch {
            guard case .network = error,
                  var answer = try? readAnswer(method: method, wait: wait, keepingAtMost: limit, failingPastLimit: failingPastLimit),
                  answer.head.statusCode >= 300 else {
                throw error
            }
            answer.reusable = false
            return answer
        }
        return try readAnswer(method: method, wait: wait, keepingAtMost: limit, failingPastLimit: failingPastLimit)
    }
}
