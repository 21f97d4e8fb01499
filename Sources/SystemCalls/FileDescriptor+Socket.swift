#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The calls on a socket made by ``FileDescriptor/socket(family:type:proto:)``.
extension FileDescriptor {
    /// `connect(2)`; on a non-blocking socket, EINPROGRESS is the usual answer.
    package func connect(to address: UnsafePointer<sockaddr>, length: socklen_t) -> Errno? {
        nothingOrErrno { systemConnect(raw, address, length) }
    }

    /// The socket's pending error (`SO_ERROR`), e.g. how a non-blocking connect ended; `nil`
    /// when there is none.
    package func pendingError() -> Errno? {
        var code: Int32 = 0
        if let failure = nothingOrErrno({ systemGetOption(raw, SOL_SOCKET, SO_ERROR, &code) }) { return failure }
        return code == 0 ? nil : Errno(code)
    }

    /// Sets an `Int32` socket option; failures are ignored (the options are optimisations).
    package func setOption(level: Int32, name: Int32, value: Int32) {
        _ = systemSetOption(raw, level, name, value)
    }

    /// `send(2)` of what it can of `bytes`, without raising SIGPIPE: a peer that closed gives
    /// EPIPE.
    package func send(_ bytes: UnsafeRawBufferPointer) -> Result<Int, Errno> {
        valueOrErrno { systemSend(raw, bytes) }
    }

    /// `recv(2)`; 0 means the peer closed its side.
    package func receive(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        valueOrErrno { systemReceive(raw, buffer) }
    }

    /// The `socktype` of a stream socket, whose C type differs between Glibc and the others.
    package static var streamSocketType: Int32 {
        #if canImport(Glibc)
        Int32(SOCK_STREAM.rawValue)
        #else
        SOCK_STREAM
        #endif
    }
}
