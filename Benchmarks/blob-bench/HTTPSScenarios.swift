import Foundation

/// The `https` group: the `http`, `upload` and `s3` groups' scenarios over TLS, on the test
/// servers' TLS ports (`Scripts/test-servers.sh up`), every client trusting only the test CA.
/// Each scenario runs the same function as its plain twin, with the TLS URL and the CA, against
/// a baseline measured over the same TLS server in the same run:
///
/// - `https-source-sync-64k`: the HTTP source from `https://127.0.0.1:18443/` against
///   `curl --cacert` (as `http-source-sync-64k`).
/// - `put-https`: ``StreamedUploader`` PUTting into nginx's `/upload-memory/` (tmpfs) on 18443
///   against `curl -T --cacert` into the same location; there is no TLS counting sink, so
///   nginx's own ceiling is in both times.
/// - `tus-upload-https`: ``TusClient`` against tuspy (`REQUESTS_CA_BUNDLE`) on
///   `https://127.0.0.1:18490/files/` (as `tus-upload-4m`).
/// - `s3-multipart-https`: ``S3Client`` against `aws s3 cp --ca-bundle` on moto behind TLS,
///   `https://127.0.0.1:18500` (as `s3-multipart-8m`).
func httpsScenarios(file: String, fileSize: Int, runs: Int) -> [ScenarioResult] {
    let authorities = TLSBenchmark.certificateAuthorities
    do {
        try LoopbackServers.start()
        guard FileManager.default.isReadableFile(atPath: authorities) else {
            throw BenchmarkError("no test CA at \(authorities) (Scripts/test-servers.sh up makes it)")
        }
    } catch {
        FileHandle.standardError.write(Data("blob-bench: https scenarios: \(error)\n".utf8))
        return [
            ScenarioResult(scenario: "https-source-sync-64k", mbps: 0, baseline: "curl (https baseline)", ratio: 0),
            ScenarioResult(scenario: "put-https", mbps: 0, baseline: "curl -T (https put baseline)", ratio: 0),
            ScenarioResult(scenario: "tus-upload-https", mbps: 0, baseline: "tuspy (tus https baseline)", ratio: 0),
            ScenarioResult(scenario: "s3-multipart-https", mbps: 0, baseline: "aws s3 cp (s3 https baseline)", ratio: 0),
        ]
    }
    return httpSourceScenario(
            file: file, fileSize: fileSize, runs: runs, server: URL(string: "https://127.0.0.1:18443/")!,
            certificateAuthorities: authorities, scenario: "https-source-sync-64k", baseline: "curl (https baseline)")
        + nginxPutScenario(
            file: file, fileSize: fileSize, server: URL(string: "https://127.0.0.1:18443/")!,
            certificateAuthorities: authorities, scenario: "put-https", baseline: "curl -T (https put baseline)")
        + tusScenario(
            file: file, fileSize: fileSize, endpoint: URL(string: "https://127.0.0.1:18490/files/")!,
            certificateAuthorities: authorities, scenario: "tus-upload-https", baseline: "tuspy (tus https baseline)")
        + s3MultipartScenario(
            file: file, fileSize: fileSize, endpoint: URL(string: "https://127.0.0.1:18500")!,
            certificateAuthorities: authorities, scenario: "s3-multipart-https", baseline: "aws s3 cp (s3 https baseline)")
}

enum TLSBenchmark {
    /// The test CA that signed the TLS servers' certificates.
    static let certificateAuthorities = "/tmp/blobstream-servers/tls/ca.pem"
}
