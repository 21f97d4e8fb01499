import Foundation

/// An AWS access key pair, with the session token of temporary credentials.
///
/// The secret is only ever used to derive signing keys: ``description``, `debugDescription`
/// and a mirror (`dump`, `print` of a containing value) show the key id and whether a token is
/// present, never the secret or the token.
public struct S3Credentials: Sendable, Hashable {
    /// The access key id (`AKIA…`), sent in every `Authorization` header.
    public let accessKeyID: String
    /// The secret access key; never printed.
    let secretAccessKey: String
    /// The session token of temporary credentials (`X-Amz-Security-Token`), or `nil`.
    let sessionToken: String?

    /// Credentials given by the caller.
    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Credentials from the standard environment variables `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY` and, for temporary credentials, `AWS_SESSION_TOKEN`.
    /// - Throws: ``S3Error/missingCredentials(reason:)`` naming the variable that is missing.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(S3Error) -> S3Credentials {
        guard let id = environment["AWS_ACCESS_KEY_ID"], !id.isEmpty else {
            throw .missingCredentials(reason: "AWS_ACCESS_KEY_ID is not set")
        }
        guard let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty else {
            throw .missingCredentials(reason: "AWS_SECRET_ACCESS_KEY is not set")
        }
        return S3Credentials(accessKeyID: id, secretAccessKey: secret, sessionToken: environment["AWS_SESSION_TOKEN"])
    }
}

extension S3Credentials: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The key id and whether there is a session token; the secret is never shown.
    public var description: String {
        "S3Credentials(accessKeyID: \(accessKeyID), secretAccessKey: <redacted>"
            + (sessionToken == nil ? ")" : ", sessionToken: <redacted>)")
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// A mirror without the secret, so `dump` and string interpolation of a containing value
    /// cannot print it either.
    public var customMirror: Mirror {
        Mirror(self, children: ["accessKeyID": accessKeyID, "secretAccessKey": "<redacted>",
                                "sessionToken": sessionToken == nil ? "nil" : "<redacted>"])
    }
}
