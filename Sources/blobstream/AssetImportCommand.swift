import BlobStream
import Foundation

/// `blobstream asset import`: copies a file into a folder-backed asset library.
enum AssetImportCommand: Command {
    static let words = ["asset", "import"]
    static let summary = "copy a file into an asset library and print its identifier"
    static let valueOptions: Set<String> = ["--asset-library"]
    static let flagOptions: Set<String> = []

    static var help: String {
        """
        usage: blobstream asset import --asset-library DIR <file>

        Copies <file> into the asset library in DIR (created if missing) and prints the new
        asset's identifier as the last line of standard output. Stream it afterwards as
        'asset://?id=ID', e.g. blobstream checksum --asset-library DIR 'asset://?id=ID'.

        Options:
              --asset-library DIR  the library folder
          -h, --help               show this help

        Exit status: 0 on success, 1 when the file cannot be imported, 64 for a wrong command line.

        """
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws(CommandFailure) -> Int32 {
        guard let directory = arguments.values["--asset-library"] else { throw .usage("missing --asset-library DIR") }
        guard arguments.positional.count == 1, let file = arguments.positional.first else {
            throw .usage("expected exactly one <file>")
        }
        // `-` is standard input to every other command: a file named so is `./-`.
        if file == "-" {
            throw .usage("asset import copies a regular file (and checks it did not change while copied), not standard input; "
                + "save it to a file first, or name a file called '-' as ./-")
        }
        do {
            let identifier = try DirectoryAssetStore(directory: directory).import(fileAt: file)
            console.output(identifier + "\n")
            return ExitStatus.success
        } catch {
            throw .runtime("\(file): cannot import into \(directory): \(error)")
        }
    }
}

/// The `--asset-library DIR` option shared by commands that read `asset://` URLs.
enum AssetLibraryOption {
    /// Registers the library in `DIR` for the `asset:` scheme, when the option is given; without
    /// it, an `asset:` argument is a usage error for every command that takes URLs.
    static func register(_ arguments: ParsedArguments) throws(CommandFailure) {
        guard let directory = arguments.values["--asset-library"] else {
            if arguments.positional.contains(where: { $0.lowercased().hasPrefix("asset:") }) {
                throw .usage("asset:// URLs need --asset-library DIR")
            }
            return
        }
        do {
            BlobURLRegistry.shared.register(assetStore: try DirectoryAssetStore(directory: directory))
        } catch {
            throw .runtime("\(directory): cannot open the asset library: \(error)")
        }
    }
}
