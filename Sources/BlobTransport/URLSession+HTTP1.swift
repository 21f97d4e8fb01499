import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
package import HTTP1

// The adapters between URLSession's types and the package's own HTTP/1.1 types, for the clients
// that take URLSession (see ``Transport``): one home, so both transports are held to the same
// checks.

extension HTTPResponseHead {
    /// The head of a URLSession answer, so that both transports (and `blobstream cat`) are held
    /// to the same checks.
    package init(_ response: HTTPURLResponse) {
        let fields = response.allHeaderFields.compactMap { name, value -> (String, String)? in
            guard let name = name as? String, let value = value as? String else { return nil }
            return (name, value)
        }
        self.init(statusCode: response.statusCode, fields: fields)
    }
}

extension URLRequest {
    /// The request for URLSession of a checked `head`: its method, URL and fields.
    package init(_ head: HTTPRequestHead) {
        self.init(url: head.url)
        httpMethod = head.method
        for (name, value) in head.fields {
            setValue(value, forHTTPHeaderField: name)
        }
    }
}

extension URLError {
    /// Whether URLSession failed because the answer breaks HTTP/1.1 (a malformed head, unusable
    /// framing, a malformed chunk), which the package's own client reports as a protocol
    /// violation and never retries: both transports classify a broken answer alike. On Linux,
    /// Foundation reports libcurl's failures as `.unknown` (or `.unsupportedURL`) with only
    /// libcurl's message, so that message is read; everything else (like "transfer closed with
    /// N bytes remaining") stays a connection failure.
    package var isMalformedAnswer: Bool {
        if [.cannotDecodeRawData, .cannotDecodeContentData, .cannotParseResponse, .badServerResponse].contains(code) { return true }
        guard [.unknown, .unsupportedURL].contains(code) else { return false }
        let message = localizedDescription.lowercased()
        return Self.libcurlProtocolErrors.contains { message.contains($0) }
    }

    /// Fragments of libcurl's messages for an answer that breaks HTTP/1.1.
    static let libcurlProtocolErrors = [
        "chunked-encoding", "content-length", "header without colon", "http version", "http/0.9",
        "weird server reply", "status line", "response header", "response code", "content encoding", "content unencoding",
    ]
}
