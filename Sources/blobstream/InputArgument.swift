import BlobStream
import BlobUpload
import Foundation
internal import SystemCalls

/// What an input argument names, decided the same way by every command: `-` is standard
/// input; an existing FIFO, socket or device (`/dev/stdin` too) is read as a pipe, once and
/// in order; an argument with a URL scheme that names no existing file is a URL; anything
/// else is a file path.
enum InputArgument {
    case standardInput
    case pipe(path: String)
    case url(URL)
    case file(path: String)

    /// Classifies `argument`.
    /// - Throws: ``BlobStreamError/unsupportedURL(url:reason:)`` for a scheme followed by
    ///   something that is not a URL.
    init(_ argument: String) throws(BlobStreamError) {
        if argument == "-" {
            guard !StandardStreams.inputIsClosed else {
                throw .sourceFailed(resource: "standard input", reason: "it is closed (the command was started with <&-); give the data on standard input, or name a file")
            }
            self = .standardInput
            return
        }
        if case .success(let status) = FileSystem.status(atPath: argument) {
            self = status.isReadOnce ? .pipe(path: argument) : .file(path: argument)
            return
        }
        guard Self.hasScheme(argument) else {
            self = .file(path: argument)
            return
        }
        guard let url = URL(string: argument) else {
            throw .unsupportedURL(url: argument, reason: "not a valid URL")
        }
        self = .url(url)
    }

    /// Whether the data can only be read once, in order, with no length known up front.
    var isPipe: Bool {
        switch self {
        case .standardInput, .pipe: return true
        case .url, .file: return false
        }
    }

    /// A synchronous stream over the input.
    func stream() throws(BlobStreamError) -> BlobInputStream {
        switch self {
        case .standardInput: return BlobInputStream(dataSource: PipeDataSource.standardInput())
        case .pipe(let path): return BlobInputStream(dataSource: PipeDataSource(path: path))
        case .url(let url): return try BlobInputStream.make(url: url)
        case .file(let path): return BlobInputStream(fileAtPath: path)
        }
    }

    /// The path of a regular file, whose size is known before reading: the file itself or a
    /// `file:` URL.
    var filePath: String? {
        switch self {
        case .file(let path): return path
        case .url(let url) where url.isFileURL: return url.path
        default: return nil
        }
    }

    /// RFC 3986: a letter, then letters, digits, `+`, `-` or `.`, then a colon.
    private static func hasScheme(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else { return false }
        let scheme = text[..<colon]
        return scheme.first!.isASCII && scheme.first!.isLetter
            && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }
}
