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
    /// endpoint's origin: the headers are meant for it. `observe` is told the body bytes
    /// written so far, after each write, from 0 again when the body is sent again (on the
    /// package's own client).
    func send(
        _ method: String, _ url: URL, headers extra: [String: String],
        body: RequestBody? = nil, tusResumable: Bool = true, observe: (@Sendable (Int) -> Void)? = nil
    ) async throws(BlobUploadError) -> HTTPReply {
        guard URLOrigin(url) == URLOrigin(endpoint) else {
            throw .crossOriginRefused(method: method, url: url.absoluteString, allowedOrigin: "\(URLOrigin(endpoint))")
        }
        try Self.refuseOwned(headers, by: "the client's headers")
        let fields = headers.merging(extra, uniquingKeysWith: { $1 })
        guard let headerProvider else {
            return try await sendOnce(method, url, fields: fields, body: body, tusResumable: tusResumable, observe: observe)
        }
        let request = HeaderRequest(method: method, url: url)
        let provided = try Self.refuseOwned(await headerProvider(request), by: "the header provider")
        let reply = try await sendOnce(
            method, url, fields: fields.merging(provided, uniquingKeysWith: { $1 }), body: body, tusResumable: tusResumable, observe: observe)
        guard let renewal = request.renewal(after: reply.statusCode) else { return reply }
        let renewed = try Self.refuseOwned(await headerProvider(renewal), by: "the header provider")
        return try await sendOnce(
            method, url, fields: fields.merging(renewed, uniquingKeysWith: { $1 }), body: body, tusResumable: tusResumable, observe: observe)
    }

    private func sendOnce(
        _ method: String, _ url: URL, fields: [String: String], body: RequestBody?, tusResumable: Bool, observe: (@Sendable (Int) -> Void)?
    ) async throws(BlobUploadError) -> HTTPReply {
        let head = try HeaderFieldCheck.head(
            method: method, url: url, fields: fields, setting: tusResumable ? [("Tus-Resumable", "1.0.0")] : [])
        return try await client.send(head, body: body, observe: observe)
    }

    /// `fields` a caller gave (`whose`), refused when one is the protocol's
    /// (``HTTPFieldOwner/tus``): the client sets those, and a caller's of another case would
    /// go out beside it.
    @discardableResult
    static func refuseOwned(_ fields: [String: String], by whose: String) throws(BlobUploadError) -> [String: String] {
        for name in fields.keys where HTTPFieldOwner.tus.owns(name) {
            throw .invalidHeader(name: name, reason: "\(whose) may not set it: the tus protocol does")
        }
        return fields
    }
}
