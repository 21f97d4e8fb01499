import BlobStream
import Foundation

/// `blobstream checksum`: prints digests in the format of `sha256sum`.
enum ChecksumCommand: Command {
    static let words = ["checksum"]
    static let summary = "print the SHA-256 (or another checksum) of files or URLs, like sha256sum"
    static let valueOptions: Set<String> = Set(["--algorithm", "-a", "--offset", "--asset-library", TLSOption.name])
        .union(HeaderOption.names)
    static let flagOptions: Set<String> = ["--base64"]

    static var help: String {
        """
        usage: blobstream checksum [--algorithm ALGORITHM] [--offset N] [-H 'Name: value']... <path-or-url>...
               blobstream checksum [--algorithm ALGORITHM] -

        Streams each file or URL through BlobInputStream and prints its checksum in the format
        of sha256sum: the lowercase hex digest, two spaces and the name as given. Names with a
        backslash or a newline are escaped as sha256sum escapes them, with a leading '\\'.
        A CRC prints as the hex of its big-endian bytes (crc64nvme: 16 digits, the value
        awscrt's crc64nvme returns); S3's x-amz-checksum-* headers carry base64 of those same
        bytes: --base64 prints that instead of the hex, as S3 and aws s3api print it.

        An argument with a URL scheme (file:, http:, https:, asset:) is opened through the URL
        registry, unless a file of that name exists; anything else is a path. 'asset://?id=ID'
        needs --asset-library. '-' is standard input; a FIFO, socket or device (/dev/stdin too)
        is read once, to its end, like sha256sum reads it.

        Options:
          -a, --algorithm ALGORITHM  sha256 (default), sha1, md5, crc32, crc32c or crc64nvme
              --base64               print the digest as base64 of its bytes (as S3 prints
                                     x-amz-checksum-* values), not as hex
              --offset N             skip the first N bytes (hash bytes N to the end); N may end
                                     in K, M or G (KiB, MiB, GiB); a pipe's are read and dropped
              --asset-library DIR    the asset library that asset:// URLs name
              --cacert FILE          trust only these CA certificates (PEM) for https: (default: the system's, or SSL_CERT_FILE)
          -H, --header 'Name: value' a header field for the requests of http(s) URLs (repeatable; e.g.
                                     'Authorization: Bearer TOKEN'); never sent to another origin
          -h, --help                 show this help

        A progress bar is drawn on standard error when it is a terminal. Errors name the file
        or URL and the cause. Exit status: 0 when every checksum was printed, 1 when any
        input failed, 64 for a wrong command line, 130 (Ctrl-C) or 143 (SIGTERM) when
        interrupted.

        """
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws(CommandFailure) -> Int32 {
        let algorithm = try parseAlgorithm(arguments.lastValue(of: "--algorithm", "-a"))
        let offset = try arguments.values["--offset"].map { text throws(CommandFailure) in
            try ByteCountArgument.parse(text, option: "--offset", bounds: 0...Int64.max)
        } ?? 0
        try AssetLibraryOption.register(arguments)
        try TLSOption.register(arguments, headers: HeaderOption.fields(arguments, owner: .download), console: console)
        guard !arguments.positional.isEmpty else { throw .usage("missing <path-or-url> (or - for standard input)") }
        if arguments.positional.filter({ $0 == "-" }).count > 1 {
            throw .usage("standard input (-) can be read only once")
        }
        // A signal cancels the calculation under way (closing its stream, so a read fails at
        // once) or, between two inputs, the next one before it starts; the command reports the
        // interruption instead of dying silently mid-line. The calculator is cancelled, not its
        // stream: a stream closed before the calculator opened it would be opened and read.
        let current = Interrupter()
        let interruption = Interruption { current.interrupt() }
        defer { interruption.end() }
        var status = ExitStatus.success
        for target in arguments.positional {
            let result: Result<ChecksumDigest, BlobStreamError>
            do throws(BlobStreamError) {
                let calculator = ChecksumCalculator(algorithm: algorithm)
                let input = try InputArgument(target)
                let stream = try input.stream()
                if offset > 0, input.isPipe {
                    current.watch(stream)
                    try skip(offset, of: stream, name: target)
                }
                current.watch(calculator: calculator)
                defer { current.watch(calculator: nil) }
                result = .success(try checksum(
                    of: stream, with: calculator, name: target, offset: input.isPipe ? 0 : offset, console: console))
            } catch {
                result = .failure(error)
            }
            if interruption.signal != nil {
                console.error("\(target): \(interruption.signalName); no checksum printed for it")
                break
            }
            switch result {
            case .success(let digest):
                console.output(line(digest: digest, name: target, base64: arguments.flags.contains("--base64")))
            case .failure(let error):
                console.error(ErrorPresenter.message(error, subject: target))
                status = ExitStatus.failure
            }
        }
        return interruption.exitStatus ?? status
    }

    private static func parseAlgorithm(_ name: String?) throws(CommandFailure) -> ChecksumAlgorithm {
        guard let name else { return .sha256 }
        guard let algorithm = ChecksumAlgorithm(name: name) else {
            let names = ChecksumAlgorithm.allCases.map(\.name).joined(separator: ", ")
            throw .usage("unknown algorithm '\(name)'; choose one of \(names)")
        }
        return algorithm
    }

    private static func checksum(
        of stream: BlobInputStream,
        with calculator: ChecksumCalculator,
        name: String,
        offset: Int64,
        console: Console
    ) throws(BlobStreamError) -> ChecksumDigest {
        if offset > 0 { try stream.seek(to: offset) }
        guard console.standardErrorIsTerminal else { return try calculator.digest(of: stream) }
        let bar = ProgressBar(console: console, label: name)
        defer { bar.finish() }
        return try calculator.digest(of: stream) { bar.update($0) }
    }

    /// Reads and drops the first `count` bytes of a read-once input, which cannot seek, as
    /// `tail -c +N` does; an input that ends first is an invalid offset naming its length.
    private static func skip(_ count: Int64, of stream: BlobInputStream, name: String) throws(BlobStreamError) {
        stream.open()
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
        defer { scratch.deallocate() }
        var skipped: Int64 = 0
        while skipped < count {
            let wanted = Int(min(Int64(scratch.count), count - skipped))
            let read = stream.read(scratch.baseAddress!.assumingMemoryBound(to: UInt8.self), maxLength: wanted)
            guard read > 0 else {
                if read == 0 { throw .invalidOffset(resource: name, offset: count, length: skipped) }
                throw stream.typedError ?? .sourceFailed(resource: name, reason: "reading failed at offset \(skipped)")
            }
            skipped += Int64(read)
        }
    }

    /// `<hex>  <name>` as sha256sum prints it, escaping `\` and newlines in the name.
    static func line(digest: ChecksumDigest, name: String, base64: Bool = false) -> String {
        let text = base64 ? digest.base64 : digest.hex
        guard name.contains("\\") || name.contains("\n") else { return "\(text)  \(name)\n" }
        let escaped = name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
        return "\\\(text)  \(escaped)\n"
    }
}
