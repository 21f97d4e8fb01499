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
    /// Seconds a connect may take, and a whole answer from the end of its request (head and
    /// body: a server that answers one byte at a time cannot stretch it), and the longest
    /// silence while a request is sent. 60 s by default.
    public var timeout: TimeInterval
    /// Seconds the answer to `CompleteMultipartUpload` may take as a whole: S3 may take
    /// minutes to assemble a large object, sending whitespace meanwhile. Never less than
    /// ``timeout``; 600 s by default.
    public var completeTimeout: TimeInterval
    /// The slowest a request body (a part, a single `PutObject`) may be sent:
    /// ``MinimumSpeed/standard`` (1 KiB/s over 30 s) by default; a server that reads it one byte
    /// at a time fails the request with a time-out.
    public var minimumSpeed: MinimumSpeed
    /// The certificate authorities an `https:` endpoint is verified against; the system's
    /// store by default.
    public var trust: TLSTrust
    /// The most bytes per second the request bodies of this configuration's client go out at,
    /// all parts in flight together (curl's `--limit-rate`); `nil`, the default, for no limit.
    /// Give several clients the same ``RateLimit`` to share one rate.
    public var rateLimit: RateLimit?

    /// A configuration.
    public init(
        endpoint: URL, region: String = "us-east-1", bucket: String, addressing: Addressing = .path,
        credentials: S3Credentials, timeout: TimeInterval = 60, completeTimeout: TimeInterval = 600,
        minimumSpeed: MinimumSpeed = .standard, trust: TLSTrust = .system
    ) {
        self.trust = trust
        self.endpoint = endpoint
        self.region = region
        self.bucket = bucket
        self.addressing = addressing
        self.credentials = credentials
        self.timeout = timeout
        self.completeTimeout = completeTimeout
        self.minimumSpeed = minimumSpeed
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
    /// CRC-64/NVME; S3 allows it only as a full-object checksum (``S3UploadOptions/fullObjectChecksum``
    /// is then implied).
    case crc64nvme

    /// The name on the command line (the raw value).
    public var description: String { rawValue }

    /// The package's algorithm.
    var algorithm: ChecksumAlgorithm { ChecksumAlgorithm(rawValue: rawValue)! }

    /// `CRC32C` as S3 spells it in `x-amz-checksum-algorithm` and XML (`ChecksumCRC32C`).
    var s3Name: String { rawValue.uppercased() }

    /// `x-amz-checksum-crc32c`.
    var headerName: String { "x-amz-checksum-\(rawValue)" }

    /// Whether the parts' checksums combine into the whole object's (the CRCs do; S3 accepts
    /// `FULL_OBJECT` only for those).
    public var combines: Bool { self == .crc32 || self == .crc32c || self == .crc64nvme }
}
