extension HTTP1Connection {
    /// For a sender between two pieces of a request body: whether the server's final answer
    /// began (or the connection ended), so the rest need not, or cannot, be sent. What the
    /// server sent so far is read without waiting for more; interim answers
    /// (``HTTPResponseHead/isInterim``: an unasked-for `100 Continue`, a `103`) are dropped,
    /// since they end nothing (RFC 9110 §15.2). A head not yet whole counts once it is.
    /// `carried` keeps those bytes between calls and, after `true`, the answer's bytes so far,
    /// for ``readAnswer(method:wait:keepingAtMost:failingPastLimit:after:)``.
    package func answerBegan(carrying carried: inout [UInt8], wait: HTTP1Wait) throws(HTTP1Error) -> Bool {
        guard hasInput else { return false }
        guard try receive(appendingTo: &carried, upTo: Self.receiveSize, wait: wait) > 0 else { return true }
        while let end = Self.endOfHead(in: carried, from: 0) {
            guard try HTTPResponseHead.parse(carried[..<end]).isInterim else { return true }
            carried.removeFirst(end + 4)
        }
        guard carried.count < HTTPResponseHead.maxHeadBytes else {
            throw .protocolViolation(reason: "the response head is longer than \(HTTPResponseHead.maxHeadBytes) bytes")
        }
        return false
    }
}
