/// One subcommand of `blobstream`. Each lives in its own file and is listed in `main.swift`;
/// the dispatcher finds it by its words, prints its help for `--help`, and maps its failures
/// to exit codes.
protocol Command {
    /// The words that select the command: `["checksum"]`, or `["asset", "import"]` for a
    /// command in a group.
    static var words: [String] { get }
    /// One line for the list of commands in `blobstream --help`.
    static var summary: String { get }
    /// The full help: usage line, description, options. Printed for `--help`.
    static var help: String { get }
    /// The options that take a value (`--algorithm sha1` or `--algorithm=sha1`), so the parser
    /// can tell their values from positional arguments.
    static var valueOptions: Set<String> { get }
    /// The options that take no value.
    static var flagOptions: Set<String> { get }

    /// Runs with the arguments after the command's words (without `--help`, which the
    /// dispatcher handles). Returns the exit status.
    static func run(_ arguments: ParsedArguments, console: Console) throws(CommandFailure) -> Int32
}

/// Why a command could not do its job; decides the exit status.
enum CommandFailure: Error {
    /// The command line is wrong: exit 64 (`EX_USAGE`) with the message and a hint to `--help`.
    case usage(String)
    /// The work failed: exit 1 with the message (which names the file or URL and the cause).
    case runtime(String)
}

/// Exit statuses, as in BSD's `sysexits.h`.
enum ExitStatus {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 64
}
