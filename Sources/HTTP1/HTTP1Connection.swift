#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
internal import SystemCalls
import Synchronization

/// One TCP connection for HTTP/1.1, used by one thread at a time with calls that each wait at
/// most until a deadline. The socket is non-blocking: a call tries the system call first and
/// `poll`s only when it would block, so a busy transfer costs one system call per buffer.
///
/// ``cancel()``, from any thread, makes the waiting call (and every later one) fail at once
/// with ``HTTP1Error/cancelled``: every wait also polls a pipe that `cancel` writes to. Both
/// descriptors are close-on-exec and are closed exactly once, when the connection goes.
///
/// With a ``TLSConfiguration`` the connection speaks TLS (`https:`, where
/// ``TLSConfiguration/isAvailable``): the same calls, waits, deadlines and cancellation, with
/// a record layer between them and the socket.
package final class HTTP1Connection: Sendable {
    let socket = LockedValue<FileDescriptor?>(nil)
    /// How bytes cross the socket once connected: as they are, or through a TLS session.
    let channel = LockedValue<Channel?>(nil)
    private let wake: (read: FileDescriptor, write: FileDescriptor)?
    private let cancelled = Atomic<Bool>(false)
    private let received = Atomic<Int>(0)
    /// ``HTTP1Progress`` of the exchange under way: its stage and the bytes sent.
    let stageCode = Atomic<UInt8>(0)
    let sentTotal = Atomic<Int>(0)

    /// Creates an unconnected connection with its cancellation pipe.
    package init() {
        switch FileDescriptor.pipe() {
        case .success(let ends): wake = ends
        case .failure: wake = nil
        }
    }

    /// Whether ``cancel()`` was called.
    package var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// The bytes received so far: more than before a request means its answer began.
    package var bytesReceived: Int { received.load(ordering: .relaxed) }

    /// Whether a kept-alive connection, idle between two requests, may carry the next one: not
    /// cancelled, and the server has sent nothing since its last answer. Bytes there (a second,
    /// unasked-for answer, a 408 before an idle close) would be read as the next request's
    /// answer, and a close there would fail a request that may not be sent twice.
    package var isReusable: Bool { !isCancelled && !hasInput }

    /// Whether `error`, from a request on a kept-alive connection that had received
    /// `receivedBefore` bytes when the request began, is that connection going stale while it
    /// was idle: the connection was lost before any byte of an answer. A request that is safe
    /// to repeat may be sent again on a new connection then; not after a time-out, when the
    /// first may still be under way.
    package func failedAsStale(_ error: HTTP1Error, receivedBefore: Int) -> Bool {
        guard case .network(_, .lost) = error else { return false }
        return bytesReceived == receivedBefore
    }

    /// Closes the connection now (its TLS session with it) rather than when the last holder
    /// lets go: a peer of a failed exchange learns at once that nobody reads any more. A call
    /// still running on another thread keeps the socket until it returns.
    package func close() {
        channel.withLock { $0 = nil }
        socket.withLock { $0 = nil }
    }

    /// Interrupts the current and every later call. Idempotent, any thread.
    package func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing), let wake else { return }
        wake.write.wakeUp()
    }

    /// Resolves `host` and connects to the first of its addresses that accepts, within `wait`:
    /// the lookup too (``HostLookup``) ends at the deadline or on ``cancel()``. With `tls`, the
    /// TLS handshake follows within the same wait, and a refused certificate fails the connect
    /// (``HTTP1Error/NetworkCause/secureConnectionFailed``) before any request byte is sent.
    package func connect(host: String, port: Int, wait: HTTP1Wait, tls: TLSConfiguration? = nil) throws(HTTP1Error) {
        let deadline = wait.deadline
        enter(.connecting)
        try connectSocket(host: host, port: port, deadline: deadline)
        guard let tls else {
            channel.withLock { $0 = .plain }
            return
        }
        enter(.handshaking)
        try startTLS(tls, host: host, deadline: deadline)
    }

    private func connectSocket(host: String, port: Int, deadline: DispatchTime) throws(HTTP1Error) {
        guard wake != nil else { throw .network(reason: "cannot create the cancellation pipe", cause: .lost) }
        let addresses = try lookUp(host, port: port, until: deadline)
        defer { freeaddrinfo(addresses.list) }
        var lastError = HTTP1Error.network(reason: "no address for host \(host)", cause: .unresolved)
        var address: UnsafeMutablePointer<addrinfo>? = addresses.list
        while let candidate = address?.pointee {
            address = candidate.ai_next
            try checkCancelled()
            do {
                try connect(to: candidate, deadline: deadline)
                return
            } catch {
                if let interruption = error.interruption { throw interruption }
                lastError = .network(reason: "connect to \(host):\(port): \(error.reason)", cause: error.cause)
            }
        }
        throw lastError
    }

    /// The addresses of `host`, waited for until `deadline` or a cancellation (see
    /// ``HostLookup``); the caller frees them.
    private func lookUp(_ host: String, port: Int, until deadline: DispatchTime) throws(HTTP1Error) -> HostLookup.Addresses {
        // An address needs no resolver, no thread and no pipe: most connections here.
        if case .success(let addresses) = HostLookup.getAddresses(host: host, service: String(port), numericOnly: true) {
            return addresses
        }
        guard let lookup = HostLookup(host: host, port: port) else {
            throw .network(reason: "cannot create the pipe of a host lookup", cause: .unresolved)
        }
        do {
            try wait(for: .readable, on: lookup.done, until: deadline)
        } catch {
            // A time-out here may pass like any other (a slow resolver), so it stays one.
            lookup.abandon()
            throw error
        }
        switch lookup.take() {
        case .success(let addresses)?: return addresses
        case .failure(let failure)?: throw .network(reason: "cannot resolve host \(host): \(failure.text)", cause: .unresolved)
        case nil: throw .network(reason: "the lookup of host \(host) ended without an outcome", cause: .unresolved)
        }
    }

    private func connect(to address: addrinfo, deadline: DispatchTime) throws(ConnectFailure) {
        let fd: FileDescriptor
        switch FileDescriptor.socket(family: address.ai_family, type: address.ai_socktype, proto: address.ai_protocol) {
        case .success(let socket): fd = socket
        case .failure(let failure): throw ConnectFailure(failure)
        }
        #if canImport(Darwin)
        fd.setOption(level: SOL_SOCKET, name: SO_NOSIGPIPE, value: 1)
        #endif
        fd.setOption(level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: 1)
        socket.withLock { $0 = fd }
        if let failure = fd.connect(to: address.ai_addr, length: address.ai_addrlen) {
            guard failure.rawValue == EINPROGRESS else { throw drop(ConnectFailure(failure)) }
            do {
                try self.wait(for: .writable, on: fd, until: deadline)
            } catch {
                throw drop(ConnectFailure(interruption: error))
            }
            if let failure = fd.pendingError() { throw drop(ConnectFailure(failure)) }
        }
    }

    /// Forgets the socket of a failed attempt (which closes once the attempt lets go of it too),
    /// and passes `failure` on.
    private func drop(_ failure: ConnectFailure) -> ConnectFailure {
        socket.withLock { $0 = nil }
        return failure
    }

    /// Sends all of `bytes` within `wait`.
    package func send(_ bytes: UnsafeRawBufferPointer, wait: HTTP1Wait) throws(HTTP1Error) {
        let (fd, channel) = try connected()
        enter(.sending)
        let clock = HTTP1WaitClock(wait)
        defer { clock.end() }
        var sent = 0
        while sent < bytes.count {
            try checkCancelled()
            switch try channel.send(UnsafeRawBufferPointer(rebasing: bytes[sent...]), on: fd) {
            case .done(let count):
                sent += count
                sentTotal.add(count, ordering: .relaxed)
                try clock.progress(count)
            case .wait(let event):
                try self.wait(for: event, on: fd, clock: clock)
            case .closed:
                throw .network(reason: "send: the connection closed", cause: .lost)
            }
        }
    }

    /// Sends all of `bytes` within `wait`.
    package func send(_ bytes: [UInt8], wait: HTTP1Wait) throws(HTTP1Error) {
        var result: Result<Void, HTTP1Error> = .success(())
        bytes.withUnsafeBytes { buffer in
            result = Result { () throws(HTTP1Error) in try send(buffer, wait: wait) }
        }
        try result.get()
    }

    /// Receives up to `buffer.count` bytes, waiting within `wait` for the first; 0 means the
    /// peer closed the connection.
    package func receive(into buffer: UnsafeMutableRawBufferPointer, wait: HTTP1Wait) throws(HTTP1Error) -> Int {
        let (fd, channel) = try connected()
        let clock = HTTP1WaitClock(wait)
        defer { clock.end() }
        // Over TLS the pace counts the bytes off the wire as they come, as for a plain socket,
        // not the decrypted ones, which come a whole record (16 KiB) at a time.
        var wire = channel.wireBytesReceived
        func wireProgress() throws(HTTP1Error) -> Bool {
            guard let before = wire, let now = channel.wireBytesReceived else { return false }
            wire = now
            if now > before { try clock.progress(Int(now - before)) }
            return true
        }
        while true {
            try checkCancelled()
            switch try channel.receive(into: buffer, on: fd) {
            case .done(let count):
                received.add(count, ordering: .relaxed)
                if try !wireProgress() { try clock.progress(count) }
                return count
            case .closed:
                return 0
            case .wait(let event):
                _ = try wireProgress()
                try self.wait(for: event, on: fd, clock: clock)
            }
        }
    }

    /// Whether the peer has sent something (or closed) that no ``receive(into:wait:)`` took
    /// yet: a look that never waits, for a sender that stops when the answer begins early.
    package var hasInput: Bool {
        guard let fd = socket.withLock({ $0 }),
              case .success(let readiness) = fd.poll(for: .readable, milliseconds: 0) else { return false }
        #if canImport(CBlobStreamTLS) && os(Linux)
        // Decrypted bytes may wait inside the session; readable bytes may be a session ticket only.
        if case .tls(let session)? = channel.withLock({ $0 }) { return session.hasInput }
        #endif
        return readiness.isReady
    }

    func connected() throws(HTTP1Error) -> (FileDescriptor, Channel) {
        guard let fd = socket.withLock({ $0 }), let channel = channel.withLock({ $0 }) else {
            throw .network(reason: "the connection is not open", cause: .lost)
        }
        return (fd, channel)
    }

    func checkCancelled() throws(HTTP1Error) {
        if isCancelled { throw .cancelled }
    }

    /// Polls `fd` for `event` and the cancellation pipe, until `clock` says the call has
    /// waited too long (``HTTP1WaitClock/expired()``).
    func wait(for event: PollEvent, on fd: FileDescriptor, clock: HTTP1WaitClock) throws(HTTP1Error) {
        while true {
            do {
                try wait(for: event, on: fd, until: clock.deadline)
                return
            } catch {
                guard error == .timedOut else { throw error }
                try clock.expired()
            }
        }
    }

    /// Polls `fd` for `event` and the cancellation pipe, until `deadline`.
    func wait(for event: PollEvent, on fd: FileDescriptor, until deadline: DispatchTime) throws(HTTP1Error) {
        guard let wake else { throw .cancelled }
        while true {
            try checkCancelled()
            let now = DispatchTime.now().uptimeNanoseconds
            let end = deadline.uptimeNanoseconds
            guard now < end else { throw .timedOut }
            let milliseconds = Int32(min((end - now + 999_999) / 1_000_000, UInt64(Int32.max)))
            switch fd.poll(for: event, orWakeUpFrom: wake.read, milliseconds: milliseconds) {
            case .success(let readiness):
                if readiness.isWokenUp { throw .cancelled }
                if readiness.isReady { return }
            case .failure(let failure):
                throw .network(reason: "poll: \(failure.text)", cause: .lost)
            }
        }
    }
}

/// Why one address did not connect.
private struct ConnectFailure: Error {
    var reason: String
    var cause: HTTP1Error.NetworkCause
    var interruption: HTTP1Error?

    init(_ failure: Errno) {
        reason = failure.text
        cause = failure.rawValue == ECONNREFUSED ? .refused : .lost
    }

    init(interruption: HTTP1Error) {
        reason = interruption.reason
        cause = .lost
        self.interruption = interruption
    }
}
