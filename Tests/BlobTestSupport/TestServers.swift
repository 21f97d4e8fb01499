import Foundation
import Glibc
import SystemCalls

/// The real peers that `Scripts/test-servers.sh up` runs on 127.0.0.1 (ports and paths here
/// match that script), and checks that make a test fail, not skip, when one is missing.
///
/// Every test that talks to a server calls the matching `require…()` first. Tests share these
/// servers with every other test process on the machine, so they must use unique file names
/// (a fresh directory from ``TempFiles/makeDirectory(in:prefix:)``) and remove what they create.
public enum TestServers {
    /// What to run when a server is missing, quoted in every failure.
    public static let instructions =
        "run `Scripts/test-servers.sh up` (it installs nginx, openssl and curl from apt, and tuspyserver, moto, botocore, awscli, crc32c and awscrt from PyPI)"

    /// Directory holding all server state: `www/`, `tus-data/`, `tls/`, `logs/`, `run/`.
    public static let stateRoot = "/tmp/blobstream-servers"

    // MARK: nginx

    /// nginx's port.
    public static let nginxPort: UInt16 = 18080
    /// nginx's document root: a file at `wwwRoot + "/a/b"` is served at `nginxURL + "a/b"`
    /// with Range, ETag and Last-Modified.
    public static let wwwRoot = stateRoot + "/www"
    /// `http://127.0.0.1:18080/`.
    public static let nginxURL = URL(string: "http://127.0.0.1:18080/")!
    /// Directory where nginx stores PUT bodies: a PUT to `uploadURL + "a/b"` (Content-Length or
    /// chunked, intermediate directories created, an existing file replaced: 201 or 204) lands
    /// at `uploadRoot + "/a/b"` only once the whole body arrived; DELETE removes it.
    public static let uploadRoot = wwwRoot + "/upload"
    /// `http://127.0.0.1:18080/upload/`.
    public static let uploadURL = URL(string: "http://127.0.0.1:18080/upload/")!
    /// Any request to `redirectPutURL + "a/b"` answers `307` with
    /// `Location: http://127.0.0.1:18080/upload/a/b` (after nginx read and dropped the body).
    public static let redirectPutURL = URL(string: "http://127.0.0.1:18080/redirect-put/")!

    /// Other ways nginx serves the same files under ``wwwRoot``.
    public enum Route: String, Sendable, CaseIterable {
        /// Range, ETag, Content-Length: nginx's defaults.
        case plain = ""
        /// Ignores Range: always `200` with the whole file.
        case noRange = "norange/"
        /// No Content-Length and no ETag: the body comes with chunked transfer coding.
        case chunked = "chunked/"
        /// At most 1 MiB/s per connection.
        case slow = "slow/"
    }

    /// The URL at which nginx serves the file at `path` (which must lie under ``wwwRoot``)
    /// through `route`.
    public static func nginxURL(forFileAtPath path: String, route: Route = .plain) throws -> URL {
        let prefix = wwwRoot + "/"
        guard path.hasPrefix(prefix) else {
            throw TestSupportError("\(path) is not under nginx's document root \(wwwRoot)")
        }
        let relative = String(path.dropFirst(prefix.count))
        guard let url = URL(string: route.rawValue + relative, relativeTo: nginxURL)?.absoluteURL else {
            throw TestSupportError("\(relative) cannot be made into a URL path")
        }
        return url
    }

    // MARK: stalling peer

    /// Port of the stall server (Scripts/stall_server.py), also reachable through nginx at
    /// `http://127.0.0.1:18080/stall/…`.
    public static let stallServerPort: UInt16 = 18081

    /// A URL whose server reads the request head and never answers; a request body is never
    /// read either, so an upload blocks once the socket buffers are full.
    public static func stallForeverURL(throughNginx: Bool = true) -> URL {
        URL(string: stallBase(throughNginx) + "stall/never")!
    }

    /// A URL answering `200` with `Content-Length: total` (default `2 * bytes`), then `bytes`
    /// bytes (byte `i` is `i % 256`), then nothing, while holding the connection open.
    public static func stallURL(afterBytes bytes: Int, total: Int? = nil, throughNginx: Bool = true) -> URL {
        let length = total.map { "/\($0)" } ?? ""
        return URL(string: stallBase(throughNginx) + "stall/after/\(bytes)\(length)")!
    }

    private static func stallBase(_ throughNginx: Bool) -> String {
        throughNginx ? nginxURL.absoluteString : "http://127.0.0.1:\(stallServerPort)/"
    }

    // MARK: tus

    /// tuspyserver 4.4.3's port (no checksum extension).
    public static let tusPort: UInt16 = 18090
    /// Creation endpoint of the plain tus server: OPTIONS and POST go here (with the trailing
    /// slash: OPTIONS without it answers 405); HEAD/PATCH/DELETE go to the Location it returns.
    public static let tusFilesURL = URL(string: "http://127.0.0.1:18090/files/")!
    /// Port of the same storage behind the checksum-verifying middleware.
    public static let checksumTusPort: UInt16 = 18091
    /// Creation endpoint of the checksum-verifying server: a PATCH whose `Upload-Checksum`
    /// (sha1, sha256 or md5, base64) does not match its body answers `460` and stores nothing.
    public static let checksumTusFilesURL = URL(string: "http://127.0.0.1:18091/files/")!
    /// Where both tus servers keep uploads: bytes in `<id>`, state in `<id>.info` (JSON with
    /// `size`, `offset`, `metadata`). tuspyserver has no GET route; compare the file instead.
    public static let tusDataRoot = stateRoot + "/tus-data"

    /// The file holding the bytes received so far for the upload at `uploadURL` (a Location
    /// returned by either tus server: its last path component is the upload id).
    public static func tusDataPath(forUpload uploadURL: URL) -> String {
        tusDataRoot + "/" + uploadURL.lastPathComponent
    }

    // MARK: moto (S3)

    /// moto 5.2.1's S3 server: path-style buckets, any credentials; it does not verify
    /// signatures or `x-amz-checksum-*` values.
    public static let motoPort: UInt16 = 18100
    /// `http://127.0.0.1:18100`.
    public static let motoURL = URL(string: "http://127.0.0.1:18100")!

    // MARK: TLS

    /// The test CA (PEM) that signed the TLS servers' certificates, made by
    /// `Scripts/test-servers.sh up` with openssl. It is in no system trust store: a client that
    /// should trust the servers below must be given this file (`curl --cacert`).
    public static let tlsCAPath = stateRoot + "/tls/ca.pem"

    /// nginx's TLS port (TLS 1.2 and 1.3): the same routes and files as ``nginxPort``, with a
    /// certificate from ``tlsCAPath`` for `IP:127.0.0.1` and `DNS:localhost`.
    public static let nginxTLSPort: UInt16 = 18443
    /// `https://127.0.0.1:18443/`: ``nginxURL`` over TLS.
    public static let nginxTLSURL = URL(string: "https://127.0.0.1:18443/")!
    /// `https://127.0.0.1:18443/upload/`: ``uploadURL`` over TLS (the files land in ``uploadRoot``).
    public static let uploadTLSURL = URL(string: "https://127.0.0.1:18443/upload/")!
    /// Any request to `redirectPutTLSURL + "a/b"` answers `307` with
    /// `Location: https://127.0.0.1:18443/upload/a/b`: the redirect stays on TLS.
    public static let redirectPutTLSURL = URL(string: "https://127.0.0.1:18443/redirect-put/")!

    /// The `https://127.0.0.1:18443/` URL at which nginx serves the file at `path` (under
    /// ``wwwRoot``) through `route`: ``nginxURL(forFileAtPath:route:)`` over TLS.
    public static func nginxTLSURL(forFileAtPath path: String, route: Route = .plain) throws -> URL {
        let url = try nginxURL(forFileAtPath: path, route: route)
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw TestSupportError("\(url) cannot be taken apart")
        }
        components.scheme = "https"
        components.port = Int(nginxTLSPort)
        guard let tlsURL = components.url else { throw TestSupportError("\(url) cannot be made https") }
        return tlsURL
    }

    /// nginx with ``nginxTLSPort``'s certificate and routes, but TLS 1.2 only: a server that
    /// predates TLS 1.3.
    public static let tls12Port: UInt16 = 18448

    /// What the TLS server on `port` (of nginx) says the connection negotiated, as
    /// `"<protocol> <cipher>"` (`"TLSv1.3 TLS_AES_128_GCM_SHA256"`): the path's answer.
    public static func tlsSessionURL(port: UInt16) -> URL {
        URL(string: "https://127.0.0.1:\(port)/_blobstream/tls-session")!
    }

    /// Port of nginx's TLS proxy in front of the plain tus server (``tusPort``): request and
    /// response bodies pass unbuffered, and the Location of a created upload is
    /// `https://127.0.0.1:18490/files/<id>` (its data still in ``tusDataPath(forUpload:)``).
    public static let tusTLSPort: UInt16 = 18490
    /// `https://127.0.0.1:18490/files/`: ``tusFilesURL`` over TLS.
    public static let tusTLSFilesURL = URL(string: "https://127.0.0.1:18490/files/")!

    /// Port of nginx's TLS proxy in front of moto (``motoPort``): bodies unbuffered, the
    /// client's `Host` header passed on as sent (SigV4 signs it).
    public static let motoTLSPort: UInt16 = 18500
    /// `https://127.0.0.1:18500`: ``motoURL`` over TLS.
    public static let motoTLSURL = URL(string: "https://127.0.0.1:18500")!

    /// TLS peers that a client trusting only ``tlsCAPath`` must refuse; each serves the same
    /// routes and files as ``nginxURL``.
    public enum UntrustedTLSPeer: UInt16, Sendable, CaseIterable {
        /// A certificate from the test CA for `DNS:wrong.example` only: the host name does not
        /// match `127.0.0.1` (nor `localhost`).
        case wrongName = 18444
        /// A self-signed certificate for `IP:127.0.0.1`, not from the test CA.
        case selfSigned = 18445
        /// A certificate from the test CA for `IP:127.0.0.1` that expired yesterday.
        case expired = 18446
        /// The good certificate, but TLS 1.0 and 1.1 only (ciphers down to OpenSSL's security
        /// level 0): a client requiring TLS 1.2 gets a `protocol_version` alert.
        case legacyProtocol = 18447

        /// The peer's port on 127.0.0.1.
        public var port: UInt16 { rawValue }
        /// `https://127.0.0.1:<port>/`.
        public var url: URL { URL(string: "https://127.0.0.1:\(port)/")! }
    }

    // MARK: requirements

    /// Throws, with instructions, unless nginx accepts connections on ``nginxPort``.
    public static func requireNginx() throws(TestSupportError) {
        try require("nginx", port: nginxPort, url: nginxURL.absoluteString)
    }

    /// Throws, with instructions, unless the stall server accepts connections on
    /// ``stallServerPort``.
    public static func requireStallServer() throws(TestSupportError) {
        try require("the stall server", port: stallServerPort, url: "http://127.0.0.1:\(stallServerPort)/stall/")
    }

    /// Throws, with instructions, unless the plain tus server accepts connections on ``tusPort``.
    public static func requireTus() throws(TestSupportError) {
        try require("the tus server (tuspyserver)", port: tusPort, url: tusFilesURL.absoluteString)
    }

    /// Throws, with instructions, unless the checksum-verifying tus server accepts connections
    /// on ``checksumTusPort``.
    public static func requireChecksumTus() throws(TestSupportError) {
        try require(
            "the checksum-verifying tus server", port: checksumTusPort, url: checksumTusFilesURL.absoluteString)
    }

    /// Throws, with instructions, unless moto's S3 server accepts connections on ``motoPort``.
    public static func requireMoto() throws(TestSupportError) {
        try require("moto's S3 server", port: motoPort, url: motoURL.absoluteString)
    }

    /// Throws, with instructions, unless nginx accepts connections on ``nginxTLSPort`` and the
    /// test CA is at ``tlsCAPath``. (The proxies at ``tusTLSPort`` and ``motoTLSPort`` also need
    /// ``requireTus()`` and ``requireMoto()``.)
    public static func requireTLS() throws(TestSupportError) {
        try require("nginx's TLS server", port: nginxTLSPort, url: nginxTLSURL.absoluteString)
        guard FileManager.default.isReadableFile(atPath: tlsCAPath) else {
            throw TestSupportError("the test CA \(tlsCAPath) is missing: \(instructions)")
        }
    }

    static func require(_ name: String, port: UInt16, url: String) throws(TestSupportError) {
        switch LoopbackSocket.connect(port: port, timeout: 2) {
        case .success(let fd):
            close(fd)
        case .failure(let error):
            throw TestSupportError("\(name) is not running at \(url) (\(error.text)): \(instructions)")
        }
    }
}

// MARK: cleanup

extension TestServers {
    /// Removes what a test uploaded to the shared servers, so that test runs leave nothing
    /// behind: a tus upload on ``tusPort``, ``checksumTusPort`` or ``tusTLSPort`` by termination
    /// (`DELETE`, which tuspyserver supports), a file PUT under ``uploadURL`` or
    /// ``uploadTLSURL`` by nginx's `DELETE` (a TLS one sent in plain to the server behind it). Where
    /// the DELETE fails (server down, upload locked) the files themselves are removed from
    /// ``tusDataRoot`` or ``uploadRoot``. Other URLs are left alone: a ``TusServerProcess``
    /// removes its own directory. Synchronous, so that it can run in a `defer`.
    public static func removeUploads(_ urls: [URL]) {
        for url in urls {
            removeUpload(url)
        }
    }

    private static func removeUpload(_ url: URL) {
        guard url.host == "127.0.0.1", let urlPort = url.port.flatMap(UInt16.init(exactly:)),
              let path = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath,
              !url.path.split(separator: "/").contains("..") else { return }
        // An upload over TLS is removed through the plain server behind it: the same storage.
        let port = [nginxTLSPort: nginxPort, tusTLSPort: tusPort][urlPort] ?? urlPort
        let files: [String]
        switch port {
        case tusPort, checksumTusPort:
            let id = url.lastPathComponent
            guard url.path.hasPrefix("/files/"), !id.isEmpty, id != "files" else { return }
            files = [tusDataRoot + "/" + id, tusDataRoot + "/" + id + ".info"]
        case nginxPort:
            guard url.path.hasPrefix("/upload/") else { return }
            files = [wwwRoot + url.path]
        default:
            return
        }
        if let status = delete(path, port: port), (200..<300).contains(status) || [404, 410].contains(status) {
            return
        }
        files.forEach(TempFiles.remove)
    }

    /// Sends `DELETE path` to 127.0.0.1:`port` and returns the answer's status, or `nil`
    /// when there was none within 10 s.
    private static func delete(_ path: String, port: UInt16) -> Int? {
        guard case .success(let fd) = LoopbackSocket.connect(port: port, timeout: 2) else { return nil }
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request = Array(("DELETE \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nTus-Resumable: 1.0.0\r\n"
            + "Content-Length: 0\r\nConnection: close\r\n\r\n").utf8)
        var written = 0
        while written < request.count {
            let count = request[written...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return nil }
            written += count
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while !answer.contains(UInt8(ascii: "\n")) {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            answer += buffer[0..<count]
        }
        // "HTTP/1.1 204 No Content"
        let words = String(decoding: answer, as: UTF8.self).split(separator: " ", maxSplits: 2)
        return words.count >= 2 ? Int(words[1]) : nil
    }
}
