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
