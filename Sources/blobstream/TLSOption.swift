import BlobStream
import Foundation
internal import HTTP1
internal import SystemCalls

/// The `--cacert FILE` option of every command that makes requests: the certificate
/// authorities `https:` servers are verified against (curl's option of the same name). Without
/// it, the system's store, whose bundle and directory `SSL_CERT_FILE` and `SSL_CERT_DIR` replace.
enum TLSOption {
    /// The option's name, for the commands' `valueOptions`.
    static let name = "--cacert"

    /// The trust the arguments ask for; the HTTP source of `http(s)` URLs is registered with it.
    /// - Throws: ``CommandFailure/usage(_:)`` for a file that cannot be read.
    static func trust(_ arguments: ParsedArguments) throws(CommandFailure) -> TLSTrust {
        guard let path = arguments.values[name] else { return .system }
        guard case .success(let status) = FileSystem.status(atPath: path), status.isRegularFile else {
            throw .usage("--cacert \(path): not a readable file of CA certificates")
        }
        do {
            try TLSConfiguration(certificateAuthorityFile: path).check()
        } catch {
            throw .usage("--cacert \(path): \(error.reason)")
        }
        return .certificateAuthorities(file: path)
    }

    /// ``trust(_:)``, registered for `http(s)` URLs in ``BlobURLRegistry/shared`` (with
    /// `headers` for their requests, `-H` of a command that reads the URL itself, each treated
    /// as a credential: never sent after a redirect to another origin, and their reconnects
    /// printed on `console`); returns the transport the upload clients use.
    @discardableResult
    static func register(
        _ arguments: ParsedArguments, headers: [String: String] = [:], console: Console
    ) throws(CommandFailure) -> Transport {
        let transport = Transport.automatic.trusting(try trust(arguments))
        var configuration = HTTPDataSource.Configuration(headers: headers, credentialHeaders: Set(headers.keys), transport: transport)
        configuration.retryObserver = ErrorPresenter.retryPrinter(console)
        BlobURLRegistry.shared.registerHTTP(configuration: configuration)
        return transport
    }
}
