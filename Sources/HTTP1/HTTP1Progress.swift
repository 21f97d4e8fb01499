/// How far an exchange on a connection got: what a failure interrupted, for messages that say
/// what timed out ("timed out waiting for the answer, after sending the whole request").
package struct HTTP1Progress: Sendable, Equatable {
    /// What the connection was doing.
    package enum Stage: UInt8, Sendable {
        case connecting = 1, handshaking, sending, awaitingAnswer, readingAnswer
    }

    package var stage: Stage
    /// Request bytes (head and body) sent in the exchange: handed to the kernel, which may
    /// still hold some unread by the peer.
    package var bytesSent: Int

    /// The activity, as "timed out …" continues.
    package var activity: String {
        switch stage {
        case .connecting: "connecting"
        case .handshaking: "in the TLS handshake"
        case .sending: "sending the request, with \(bytesSent) bytes written to the connection (the server may have read fewer)"
        case .awaitingAnswer: "waiting for the answer, after sending the whole request (\(bytesSent) bytes)"
        case .readingAnswer: "reading the answer"
        }
    }
}

extension HTTP1Connection {
    /// Where this connection's exchanges got to, counting the bytes sent since `sentBefore`
    /// (``bytesSent`` when the exchange began); `nil` before any connect.
    package func progress(sentSince sentBefore: Int = 0) -> HTTP1Progress? {
        HTTP1Progress.Stage(rawValue: stageCode.load(ordering: .relaxed))
            .map { HTTP1Progress(stage: $0, bytesSent: bytesSent - sentBefore) }
    }

    /// Request bytes sent on this connection so far.
    package var bytesSent: Int { sentTotal.load(ordering: .relaxed) }

    func enter(_ stage: HTTP1Progress.Stage) {
        stageCode.store(stage.rawValue, ordering: .relaxed)
    }
}
