extension HTTP1Connection {
    /// For a sender between two pieces of a request body: whether the server's final answer
    /// began (or the connection ended), so the rest need not, or cannot, be sent. What the
    /// server sent so far is read without waiting for more; interim answers (`1xx` but `101`,
    /// such as an unasked-for `100 Continue` or a `103`) are dropped, since they end nothing
    /// (RFC 9110 §15.2). `carried` keeps the bytes of a head not yet whole between calls and,
    /// after `true`, the answer's bytes so far, for ``readAnswer(method:wait:keepingAtMost:failingPastLimit:after:)``.
    package func answerBegan(carrying carried: inout [UInt8], wait: HTTP1Wait) throws(HTTP1Error) -> Bool {
        guard hasInput else { return false }
        guard try receive(appendingTo: &carried, upTo: Self.receiveSize, wait: wait) > 0 else { return true }
        while true {
            // "HTTP/1.1 100": the status decides.
            guard carried.count >= 12 else { return false }
            guard Self.startsInterimHead(carried) else { return true }
            guard let end = Self.endOfHead(in: carried, from: 0) else {
                if carried.count > HTTPResponseHead.maxHeadBytes {
                    throw .protocolViolation(reason: "an interim response head is longer than \(HTTPResponseHead.maxHeadBytes) bytes")
                }
                return false
            }
            carried.removeFirst(end + 4)
        }
    }

    /// Whether `bytes` begin the status line of an interim answer other than `101`.
    private static func startsInterimHead(_ bytes: [UInt8]) -> Bool {
        let prefix = Array("HTTP/1.".utf8)
        guard bytes.count >= 12, Array(bytes[0..<7]) == prefix, bytes[8] == UInt8(ascii: " "), bytes[9] == UInt8(ascii: "1") else { return false }
        return !(bytes[10] == UInt8(ascii: "0") && bytes[11] == UInt8(ascii: "1"))
    }
}
