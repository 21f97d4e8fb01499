import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// The signer against botocore's `S3SigV4Auth` (`Scripts/sigv4_oracle.py`), byte for byte, on
/// a table of requests signed at a fixed date.
@Suite struct SigV4OracleTests {
    struct Case: Sendable {
        var method: String
        var key: String
        var query: [(String, String)] = []
        var fields: [(String, String)] = []
        var body: [UInt8]? = nil
        var token: String? = nil
        var endpoint = "http://127.0.0.1:18100"
        var region = "us-east-1"
    }

    static let bucket = "oracle-bucket"
    static let date = Date(timeIntervalSince1970: 1_795_000_000)   // 2026-11-18T…Z

    static let cases: [Case] = [
        Case(method: "POST", key: "plain/key.bin", query: [("uploads", "")]),
        Case(method: "PUT", key: "a b/c+d=e&f?g#h", query: [("partNumber", "7"), ("uploadId", "x/y+z=w&v %~")],
             fields: [("x-amz-checksum-crc32c", "yZRlqg==")], body: Array("hello, part".utf8)),
        Case(method: "PUT", key: "ünïcødé/日本語/🙂.txt", fields: [("Content-Type", "text/plain; charset=utf-8")],
             body: Array("grüße".utf8), token: "FwoGZXIvYXdzE//token+with/slashes=="),
        Case(method: "GET", key: "list me", query: [("uploadId", "abc"), ("max-parts", "1000"), ("part-number-marker", "0")],
             token: "session-token"),
        Case(method: "DELETE", key: "k!'()*", query: [("uploadId", "ID with spaces")]),
        Case(method: "POST", key: "dir/obj", query: [("uploadId", "U")],
             fields: [("Content-Type", "application/xml"), ("x-amz-meta-note", "  runs   of   spaces  ")],
             body: Array("<CompleteMultipartUpload/>".utf8)),
        Case(method: "PUT", key: "tilde~and.dot-_", fields: [("x-amz-checksum-sha256", "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=")],
             body: nil, endpoint: "http://localhost:9000", region: "eu-west-3"),
        Case(method: "HEAD", key: "", endpoint: "http://LOCALHOST:9000"),
        Case(method: "PUT", key: "v6/key", query: [("partNumber", "1"), ("uploadId", "U")], body: Array("six".utf8),
             endpoint: "http://[::1]:18100"),
    ]

    @Test func signaturesEqualBotocoresByteForByte() throws {
        let credentials = S3Credentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
        var specs: [[String: Any]] = []
        var ours: [SigV4Signer.Signed] = []
        for item in Self.cases {
            let creds = S3Credentials(accessKeyID: credentials.accessKeyID, secretAccessKey: credentials.secretAccessKey,
                                      sessionToken: item.token)
            // Signed as the wire signs what it sends: URL, then its components, and its host.
            let wire = try S3Wire(configuration: S3Configuration(
                endpoint: URL(string: item.endpoint)!, region: item.region, bucket: Self.bucket, credentials: creds))
            let call = S3Call(operation: item.method, method: item.method, key: item.key, query: item.query, fields: item.fields)
            let payload = item.body.map { ChecksumDigest.hex(SHA256.digest(of: $0).bytes) } ?? SigV4Signer.unsignedPayload
            ours.append(wire.sign(call, url: try wire.url(for: call), payloadHash: payload, date: Self.date))
            var spec: [String: Any] = [
                "method": item.method, "endpoint": item.endpoint, "path": "/" + Self.bucket + "/" + item.key,
                "params": item.query.map { [$0.0, $0.1] }, "headers": Dictionary(item.fields, uniquingKeysWith: { $1 }),
                "access_key": creds.accessKeyID, "secret_key": creds.secretAccessKey, "region": item.region,
                "timestamp": SigV4Signer.timestamp(Self.date),
            ]
            if let token = item.token { spec["token"] = token }
            if let body = item.body { spec["body_hex"] = ChecksumDigest.hex(body) } else { spec["unsigned"] = true }
            specs.append(spec)
        }
        let input = try JSONSerialization.data(withJSONObject: specs)
        let output = try PythonTool.run([PythonTool.scripts.appendingPathComponent("sigv4_oracle.py").path], input: input)
        let answers = try #require(try JSONSerialization.jsonObject(with: output) as? [[String: Any]])
        try #require(answers.count == Self.cases.count)
        for (index, (answer, signed)) in zip(answers, ours).enumerated() {
            #expect(signed.canonicalRequest == answer["canonical_request"] as? String, "case \(index)")
            #expect(signed.stringToSign == answer["string_to_sign"] as? String, "case \(index)")
            #expect(signed.authorization == answer["authorization"] as? String, "case \(index)")
            // botocore sends the same path, and the same query (in its own order, spaces as '+').
            let path = Self.cases[index].endpoint + "/" + Self.bucket + "/" + S3URLEncoding.encode(Self.cases[index].key, keepingSlash: true)
            let botoURL = try #require(answer["url"] as? String)
            let botoParts = botoURL.split(separator: "?", maxSplits: 1).map(String.init)
            #expect(path == botoParts[0], "case \(index)")
            let botoQuery = (botoParts.count > 1 ? botoParts[1] : "").split(separator: "&").map {
                let pair = $0.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                    $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
                }
                return (pair[0], pair.count > 1 ? pair[1] : "")
            }
            #expect(S3URLEncoding.canonicalQuery(botoQuery) == S3URLEncoding.canonicalQuery(Self.cases[index].query), "case \(index)")
            let sentFields = Dictionary(signed.fields.map { ($0.0.lowercased(), $0.1) }, uniquingKeysWith: { $1 })
            let botoFields = Dictionary(((answer["headers"] as? [String: String]) ?? [:]).map { ($0.key.lowercased(), $0.value) },
                                        uniquingKeysWith: { $1 })
            for name in ["x-amz-date", "x-amz-content-sha256", "x-amz-security-token", "authorization"] {
                #expect(sentFields[name] == botoFields[name], "case \(index) \(name)")
            }
        }
    }

    @Test func hmacMatchesRFC4231() {
        // RFC 4231 test cases 2 and 6 (a key longer than the block).
        #expect(ChecksumDigest.hex(HMACSHA256.mac(key: Array("Jefe".utf8), "what do ya want for nothing?"))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(ChecksumDigest.hex(HMACSHA256.mac(key: [UInt8](repeating: 0xaa, count: 131),
                                              "Test Using Larger Than Block-Size Key - Hash Key First"))
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func theSecretNeverAppearsInDescriptions() throws {
        let secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
        let credentials = S3Credentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: secret, sessionToken: "TOKEN-SECRET")
        var dumped = ""
        dump(credentials, to: &dumped)
        for text in ["\(credentials)", String(reflecting: credentials), dumped, "\([credentials])"] {
            #expect(!text.contains(secret))
            #expect(!text.contains("TOKEN-SECRET"))
            #expect(text.contains("AKIDEXAMPLE"))
        }
        let fromEnvironment = try S3Credentials.fromEnvironment(["AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": secret])
        #expect(!"\(fromEnvironment)".contains(secret))
        #expect(throws: S3Error.missingCredentials(reason: "AWS_SECRET_ACCESS_KEY is not set")) {
            try S3Credentials.fromEnvironment(["AWS_ACCESS_KEY_ID": "A"])
        }
    }
}
