import BlobStream
import Foundation

/// Where and as whom an ``S3Client`` talks: the endpoint, the region it signs for, the bucket,
/// how the bucket is addressed, and the credentials.
public struct S3Configuration: Sendable {
    /// How the bucket appears in a request's URL.
    public enum Addressing: Sendable, Hashable {
        /// `http://endpoint/bucket/key`: what local servers (moto, MinIO, Ceph RGW) need.
        case path
        /// `http://bucket.endpoint/key`: AWS's default for new buckets.
        case virtualHost
    }

    /// The service's base URL, `https://host[:port]` or `http://host[:port]` (a path is ignored).
    public var endpoint: URL
    /// The region signed for (`us-east-1` for most S3-compatible servers).
    public var region: String
    /// The bucket every request of the client goes to.
    public var bucket: String
    /// How the bucket is addressed; `.path` by default.
    public var addressing: Addressing
    /// The credentials requests are signed with.
    public var credentials: S3Credentials
    /// Seconds a connect, or any wait for progress of a send or receive, may take.
    public var timeout: TimeInterval
    /// The certificate authorities an `https:` endpoint is verified against; the system's
    /// store by default.
    public var trust: TLSTrust

    /// A configuration.
    public init(
        endpoint: URL, region: String = "us-east-1", bucket: String, addressing: Addressing = .path,
        credentials: S3Credentials, timeout: TimeInterval = 60, trust: TLSTrust = .system
    ) {
        self.trust = trust
        self.endpoint = endpoint
        self.region = region
        self.bucket = bucket
        self.addressing = addressing
        self.credentials = credentials
        self.timeout = timeout
    }

    /// A configuration with credentials from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
    /// `AWS_SESSION_TOKEN`, and the region from `AWS_REGION` (else `AWS_DEFAULT_REGION`, else
    /// `us-east-1`).
    /// - Throws: ``S3Error/missingCredentials(reason:)``.
    public static func fromEnvironment(
        endpoint: URL, bucket: String, addressing: Addressing = .path,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(S3Error) -> S3Configuration {
        let region = [environment["AWS_REGION"], environment["AWS_DEFAULT_REGION"]].compactMap { $0 }.first { !$0.isEmpty }
        return S3Configuration(
            endpoint: endpoint, region: region ?? "us-east-1", bucket: bucket, addressing: addressing,
            credentials: try S3Credentials.fromEnvironment(environment))
    }
}

/// The checksum each part carries (`x-amz-checksum-*`), computed while the part is read.
public enum S3ChecksumAlgorithm: String, Sendable, CaseIterable, CustomStringConvertible {
    /// CRC-32C, the default: hardware-accelerated, and what S3 recommends.
    case crc32c
    /// CRC-32 (zlib's).
    case crc32
    /// SHA-1.
    case sha1
    /// SHA-256; parts are then also signed with their payload hash at no extra cost.
    case sha256

    /// The name on the command line (the raw value).
    public var description: String { rawValue }

    /// The package's algorithm.
    var algorithm: ChecksumAlgorithm { ChecksumAlgorithm(rawValue: rawValue)! }

    /// `CRC32C` as S3 spells it in `x-amz-checksum-algorithm` and XML (`ChecksumCRC32C`).
    var s3Name: String { rawValue.uppercased() }

    /// `x-amz-checksum-crc32c`.
    var headerName: String { "x-amz-checksum-\(rawValue)" }
}
