#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
internal import SystemCalls

/// The addresses of a host, found by `getaddrinfo` on a thread of its own, so that whoever
/// waits for them can give up at a deadline or on a cancellation.
///
/// Why a thread: `getaddrinfo` cannot be interrupted, and with a slow or unreachable resolver
/// it blocks for as long as its retries take (5 s per attempt and name server by default),
/// past any deadline and through any `cancel()`. A numeric host (an IP address, as every
/// loopback test uses) needs no resolver and is looked up at once, without a thread. A lookup
/// that nobody waits for any more frees its result itself when it ends.
final class HostLookup: Sendable {
    /// The addresses `getaddrinfo` returned, owned by whoever holds this, who must free them.
    struct Addresses: @unchecked Sendable {
        let list: UnsafeMutablePointer<addrinfo>
    }

    /// How a lookup ended: its addresses, or `getaddrinfo`'s error status.
    typealias Outcome = Result<Addresses, LookupError>

    /// `getaddrinfo`'s error status, and its text.
    struct LookupError: Error {
        let status: Int32
        var text: String { String(cString: gai_strerror(status)) }
    }

    private enum State: Sendable {
        case pending
        case finished(Outcome)
        case abandoned
    }

    /// Readable once the lookup ended: a pipe its thread writes to.
    let done: FileDescriptor
    private let signal: FileDescriptor
    private let state = LockedValue<State>(.pending)
    /// Frees addresses nobody took (`freeaddrinfo`; replaceable for tests).
    private let release: @Sendable (Addresses) -> Void

    /// Looks up `host` and `port` for a stream socket, numerically at once when `host` is an
    /// address, otherwise with `resolve` (`getaddrinfo` by default) on a new thread; `release`
    /// frees addresses that nobody took. Both are replaceable for tests. `nil` when no pipe
    /// could be made.
    init?(
        host: String, port: Int,
        resolve: @escaping @Sendable (String, String, Bool) -> Outcome = HostLookup.getAddresses,
        release: @escaping @Sendable (Addresses) -> Void = { freeaddrinfo($0.list) }
    ) {
        self.release = release
        guard case .success(let pipe) = FileDescriptor.pipe() else { return nil }
        done = pipe.read
        signal = pipe.write
        let service = String(port)
        let host = Self.loopbackName(for: host) ?? host
        if case .success(let addresses) = resolve(host, service, true) {
            state.withLock { $0 = .finished(.success(addresses)) }
            signal.wakeUp()
            return
        }
        WorkerThreads.shared.start("HTTP1 lookup \(host)") { [self] in finish(resolve(host, service, false)) }
    }

    deinit {
        abandon()
    }

    /// The outcome, once the lookup ended (the addresses are then the caller's to free), or
    /// `nil` while it runs.
    func take() -> Outcome? {
        state.withLock { state in
            guard case .finished(let outcome) = state else { return nil }
            state = .abandoned
            return outcome
        }
    }

    /// Tells a lookup still under way that its outcome is not wanted, or frees one that ended
    /// and was not taken. Idempotent.
    func abandon() {
        let unclaimed = state.withLock { state -> Outcome? in
            defer { state = .abandoned }
            if case .finished(let outcome) = state { return outcome }
            return nil
        }
        if case .success(let addresses)? = unclaimed { release(addresses) }
    }

    private func finish(_ outcome: Outcome) {
        let kept = state.withLock { state -> Bool in
            guard case .pending = state else { return false }
            state = .finished(outcome)
            return true
        }
        if kept {
            signal.wakeUp()
        } else if case .success(let addresses) = outcome {
            release(addresses)
        }
    }

    /// `localhost` for a name under `.localhost`, which RFC 6761 reserves for the loopback
    /// interface and which curl and browsers resolve so (glibc's resolver does not), and for
    /// `localhost.`, the same name fully qualified; `nil` for any other name. S3's virtual-host buckets (`bucket.s3.localhost`) are tested that way.
    static func loopbackName(for host: String) -> String? {
        let name = host.lowercased()
        return name == "localhost." || name.hasSuffix(".localhost") || name.hasSuffix(".localhost.") ? "localhost" : nil
    }

    /// `getaddrinfo` for a stream socket; `numericOnly` asks only whether `host` is an address.
    static func getAddresses(host: String, service: String, numericOnly: Bool) -> Outcome {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = FileDescriptor.streamSocketType
        if numericOnly { hints.ai_flags = AI_NUMERICHOST }
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, service, &hints, &list)
        guard status == 0, let list else { return .failure(LookupError(status: status == 0 ? EAI_NONAME : status)) }
        return .success(Addresses(list: list))
    }
}
