import Foundation

extension BlobURLRegistry {
    /// Registers `http` and `https`, making an ``HTTPDataSource`` with `configuration` for each
    /// URL. ``BlobURLRegistry/shared`` has them registered with the default configuration;
    /// register again to change it (for example to add an `Authorization` header).
    public func registerHTTP(configuration: HTTPDataSource.Configuration = HTTPDataSource.Configuration()) {
        for scheme in ["http", "https"] {
            register(scheme: scheme) { url throws(BlobStreamError) in
                if let problem = HTTPDataSource.problem(with: url, headers: configuration.headers) { throw problem }
                return HTTPDataSource(url: url, configuration: configuration)
            }
        }
    }
}
