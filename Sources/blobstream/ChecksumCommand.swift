import BlobStream
import Foundation

/// `blobstream checksum`: prints digests in the format of `sha256sum`.
enum ChecksumCommand: Command {
    static let words = ["checksum"]
    static let summary = "print the SHA-256 (or another checksum) of files or URLs, like sha256sum"
    static let valueOptions: Set<String> = ["--algorithm", "-a", "--offset", "--asset-library"]
    static let flagOptions: Set<String> = []

    static var help: String {
        """
        usage: blobstream checksum [--algorithm ALGORITHM] [--offset N] [--asset-library DIR] <path-or-url>...

        Streams each file or URL through BlobInputStream and prints its checksum in the format
        of sha256sum: the lowercase hex digest, two spaces and the name as given. Names with a
        backslash or a newline are escaped as sha256sum escapes them, with a leading '\\'.

        An argument with a URL scheme (file:, http:, https:, asset:) is opened through the URL
        registry, unless a file of that name exists; anything else is a path. 'asset://?id=ID'
        needs --asset-library.

        Options:
          -a, --algorithm ALGORITHM  sha256 (default), sha1, md5, crc32 or crc32c
              --offset N             skip the first N bytes (hash bytes N to the end)
              --asset-library DIR    the asset library that asset:// URLs name
          -h, --help                 show this help

        A progress bar is drawn on standard error when it is a terminal. Errors name the file
        or URL and the cause. Exit status: 0 when every checksum was printed, 1 when any
        input failed, 64 for a wrong command line.

        """
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws(CommandFailure) -> Int32 {
        let algorithm = try parseAlgorithm(arguments.values["--algorithm"] ?? arguments.values["-a"])
        let offset = try parseOffset(arguments.values["--offset"])
        try AssetLibraryOption.register(arguments)
        if arguments.values["--asset-library"] == nil, arguments.positional.contains(where: { $0.lowercased().hasPrefix("asset:") }) {
            throw .usage("asset:// URLs need --asset-library DIR")
        }
        guard !arguments.positional.isEmpty else { throw .usage("missing <path-or-url>") }
        var status = ExitStatus.success
        for target in arguments.positional {
            do throws(BlobStreamError) {
                let digest = try checksum(of: target, algorithm: algorithm, offset: offset, console: console)
                console.output(line(digest: digest, name: target))
            } catch {
                console.error(message(for: error, target: target))
                status = ExitStatus.failure
            }
        }
        return status
    }

    private static func parseAlgorithm(_ name: String?) throws(CommandFailure) -> ChecksumAlgorithm {
        guard let name else { return .sha256 }
        guard let algorithm = ChecksumAlgorithm(name: name) else {
            let names = ChecksumAlgorithm.allCases.map(\.name).joined(separator: ", ")
            throw .usage("unknown algorithm '\(name)'; choose one of \(names)")
        }
        return algorithm
    }

    private static func parseOffset(_ text: String?) throws(CommandFailure) -> Int64 {
        guard let text else { return 0 }
        guard let offset = Int64(text), offset >= 0 else {
            throw .usage("--offset takes a byte count of 0 or more, not '\(text)'")
        }
        return offset
    }

    private static func checksum(
        of target: String,
        algorithm: ChecksumAlgorithm,
        offset: Int64,
        console: Console
    ) throws(BlobStreamError) -> ChecksumDigest {
        let stream = try makeStream(for: target)
        if offset > 0 {
            guard stream.setProperty(NSNumber(value: offset), forKey: .fileCurrentOffsetKey) else {
                throw BlobStreamError.invalidOffset(resource: target, offset: offset, length: nil)
            }
        }
        let calculator = ChecksumCalculator(algorithm: algorithm)
        guard console.standardErrorIsTerminal else { return try calculator.digest(of: stream) }
        let bar = ProgressBar(console: console, label: target)
        defer { bar.finish() }
        return try calculator.digest(of: stream) { bar.update($0) }
    }

    /// A URL when the argument starts with a scheme and names no existing file; a path otherwise.
    private static func makeStream(for target: String) throws(BlobStreamError) -> BlobInputStream {
        guard let url = try ArgumentURL.url(target) else { return BlobInputStream(fileAtPath: target) }
        return try BlobInputStream.make(url: url)
    }

    /// `<hex>  <name>` as sha256sum prints it, escaping `\` and newlines in the name.
    static func line(digest: ChecksumDigest, name: String) -> String {
        guard name.contains("\\") || name.contains("\n") else { return "\(digest.hex)  \(name)\n" }
        let escaped = name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
        return "\\\(digest.hex)  \(escaped)\n"
    }

    /// The error's sentence, prefixed with the argument when the sentence does not name it.
    private static func message(for error: BlobStreamError, target: String) -> String {
        let text = error.description
        return text.contains(target) ? text : "\(target): \(text)"
    }
}
