import BlobStream
import Foundation
import Testing

@Suite struct FileDataSourceTests {
    @Test func missingFileIsNotFound() {
        let source = FileDataSource(path: "/nonexistent/blob")
        let result = Mutex1<Result<BlobSourceDescription, BlobStreamError>?>(nil)
        source.open { result.set($0) }
        #expect(result.get() == .failure(.notFound(resource: "/nonexistent/blob")))
    }
}

final class Mutex1<T: Sendable>: @unchecked Sendable {
    private var value: T
    private let lock = NSLock()
    init(_ value: T) { self.value = value }
    func set(_ v: T) { lock.lock(); value = v; lock.unlock() }
    func get() -> T { lock.lock(); defer { lock.unlock() }; return value }
}
