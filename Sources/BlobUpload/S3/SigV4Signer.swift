import BlobStream
import Foundation

/// AWS Signature Version 4 for S3 (the `s3` service's variant: the path is signed as sent,
/// never normalized, and `X-Amz-Content-SHA256` is always sent and signed).
///
/// Tested byte for byte against botocore's `S3SigV4Auth` (`Scripts/sigv4_oracle.py`).
struct SigV4Signer: Sendable {
    /// The payload hash of a request whose body is not hashed: its bytes are covered by an
    /// `x-amz-checksum-*` field instead (signed like every other `x-amz-` field).
    static let unsignedPayload = "UNSIGNED-PAYLOAD"
    /// SHA-256 of no bytes, the payload hash of a request without a body.
    static let emptyPayload = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    let credentials: S3Credentials
    let region: String
    var service = "s3"

    /// What signing produced: the fields to send and, for tests and diagnostics, the texts
    /// that were signed.
    struct Signed: Sendable {
        /// Every field to send besides the caller's: `X-Amz-Date`, `X-Amz-Content-SHA256`,
        /// `X-Amz-Security-Token` (temporary credentials) and `Authorization`.
        var fields: [(String, String)]
        var canonicalRequest: String
        var stringToSign: String
        var authorization: String
    }

    /// Signs a request.
    /// - Parameters:
    ///   - path: The request path exactly as sent, already percent-encoded.
    ///   - query: The canonical query string (``S3URLEncoding/canonicalQuery(_:)``), which is
    ///     also sent as is.
    ///   - host: The `Host` field as sent (lowercase, with the port unless it is the default).
    ///   - fields: The caller's fields to sign (`x-amz-*`, `content-type`, `content-md5`).
    ///   - payloadHash: The hex SHA-256 of the body, ``unsignedPayload`` or ``emptyPayload``.
    func sign(
        method: String, path: String, query: String, host: String, fields: [(String, String)],
        payloadHash: String, date: Date
    ) -> Signed {
        let timestamp = Self.timestamp(date)
        let day = String(timestamp.prefix(8))
        var added = [("X-Amz-Date", timestamp), ("X-Amz-Content-SHA256", payloadHash)]
        if let token = credentials.sessionToken { added.append(("X-Amz-Security-Token", token)) }

        var signed: [String: [String]] = ["host": [host]]
        for (name, value) in fields + added {
            signed[name.lowercased(), default: []].append(Self.trimmed(value))
        }
        let names = signed.keys.sorted()
        let canonicalFields = names.map { "\($0):\(signed[$0]!.joined(separator: ","))\n" }.joined()
        let signedNames = names.joined(separator: ";")
        let canonicalRequest = [method, path, query, canonicalFields, signedNames, payloadHash].joined(separator: "\n")
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = ["AWS4-HMAC-SHA256", timestamp, scope, ChecksumDigest.hex(SHA256.digest(of: Array(canonicalRequest.utf8)).bytes)]
            .joined(separator: "\n")
        let signature = ChecksumDigest.hex(HMACSHA256.mac(key: signingKey(day: day), stringToSign))
        let authorization = "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), "
            + "SignedHeaders=\(signedNames), Signature=\(signature)"
        return Signed(fields: added + [("Authorization", authorization)], canonicalRequest: canonicalRequest,
                      stringToSign: stringToSign, authorization: authorization)
    }

    /// The key derived for one day, region and service; the secret itself never signs.
    private func signingKey(day: String) -> [UInt8] {
        let date = HMACSHA256.mac(key: Array("AWS4\(credentials.secretAccessKey)".utf8), day)
        let region = HMACSHA256.mac(key: date, self.region)
        let service = HMACSHA256.mac(key: region, self.service)
        return HMACSHA256.mac(key: service, "aws4_request")
    }

    /// `YYYYMMDD'T'HHMMSS'Z'` in UTC.
    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
    }

    /// A field value as signed: trimmed, runs of whitespace made one space.
    private static func trimmed(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }).joined(separator: " ")
    }
}

/// The percent-encoding of S3 request paths and queries (RFC 3986 unreserved characters
/// stay, every other UTF-8 byte is `%XX` in upper case), used for both what is sent and what is
/// signed, so the two can never differ.
enum S3URLEncoding {
    /// `value` encoded; `/` stays when `keepingSlash` (an object key's path).
    static func encode(_ value: String, keepingSlash: Bool = false) -> String {
        var out = [UInt8]()
        out.reserveCapacity(value.utf8.count)
        let digits = Array("0123456789ABCDEF".utf8)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"),
                 UInt8(ascii: "."), UInt8(ascii: "~"):
                out.append(byte)
            case UInt8(ascii: "/") where keepingSlash:
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The canonical query string: names and values encoded, sorted by name then value, an
    /// empty value written as `name=`.
    static func canonicalQuery(_ items: [(String, String)]) -> String {
        items.map { (encode($0.0), encode($0.1)) }
            .sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }
}
