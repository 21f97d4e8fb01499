import BlobStream
import Foundation
internal import HTTP1
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How a ``TusClient`` sends one request: on the endpoint's origin only, with the client's
/// headers and its ``TusClient/headerProvider``'s, once more after a 401 or 403 with renewed
/// fields, paced by its ``TusClient/rateLimit``.
extension TusClient {
    /// Sends one tus request: `Tus-Resumable`, the client's headers and its provider's added;
    /// a 401 or 403 asks the provider again and sends the request once more. Only to the
    /// endpoint's origin: the headers are meant for it. `observe` is told the body bytes as
    /// they are written (on the package's own client).
    func send(
        _ method: String, _ url: URL, headers extra: [String: String],
        body: Data? = nil, tusResumable: Bool = true, observe: (@Sendable (Int) -> Void)? = nil
    ) async throws(BlobUploadError) -> HTTPReply {
        guard URLOrigin(url) == URLOrigin(endpoint) else {
            throw .crossOriginRefused(method: method, url: url.absoluteString, allowedOrigin: "\(URLOrigin(endpoint))")
        }
        let fields = headers.merging(extra, uniquingKeysWith: { $1 })
        guard let headerProvider else {
            return try await sendOnce(method, url, fields: fields, body: body, tusResumable: tusResumable, observe: observe)
        }
        var request = HeaderRequest(method: method, url: url)
        let provided = try Self.checkProvided(await headerProvider(request))
        let reply = try await sendOnce(
            method, url, fields: fields.merging(provided, uniquingKeysWith: { $1 }), body: body, tusResumable: tusResumable, observe: observe)
        guard HeaderRequest.refreshingStatuses.contains(reply.statusCode) else { return reply }
        request.refusedStatus = reply.statusCode
        let renewed = try Self.checkProvided(await headerProvider(request))
        return try await sendOnce(
            method, url, fields: fields.merging(renewed, uniquingKeysWith: { $1 }), body: body, tusResumable: tusResumable, observe: observe)
    }

    private func sendOnce(
        _ method: String, _ url: URL, fields: [String: String], body: Data?, tusResumable: Bool, observe: (@Sendable (Int) -> Void)?
    ) async throws(BlobUploadError) -> HTTPReply {
        let head = try HeaderFieldCheck.head(
            method: method, url: url, fields: fields, setting: tusResumable ? [("Tus-Resumable", "1.0.0")] : [])
        return try await client.send(head, body: body, observe: observe)
    }

    /// The provider's `fields`, refused when one is the protocol's: the upload sets those.
    private static func checkProvided(_ fields: [String: String]) throws(BlobUploadError) -> [String: String] {
        for name in fields.keys {
            let lowered = name.lowercased()
            if ["tus-resumable", "host", "transfer-encoding", "content-length", "content-type"].contains(lowered)
                || lowered.hasPrefix("upload-") {
                throw .invalidHeader(name: name, reason: "the header provider may not set it: the tus protocol does")
            }
        }
        return fields
    }
}
