/// Finds the command named by the leading arguments, handles `--help` at every level, and
/// turns failures into messages and exit statuses.
struct Dispatcher {
    let program: String
    let commands: [any Command.Type]

    /// Runs the command line (without the program name) and returns the exit status.
    func run(_ arguments: [String]) -> Int32 {
        let console = Console(commandName: program)
        guard let first = arguments.first else {
            console.standardError(overview)
            return ExitStatus.usage
        }
        if first == "--help" || first == "-h" || first == "help" {
            return help(for: Array(arguments.dropFirst()), console: console)
        }
        // The longest match wins, so `asset import` and a plain `asset` could coexist.
        let match = commands
            .filter { arguments.starts(with: $0.words) }
            .max { $0.words.count < $1.words.count }
        guard let command = match else {
            if !group(first).isEmpty {
                let rest = arguments.dropFirst()
                if rest.contains("--help") || rest.contains("-h") {
                    console.output(groupHelp(first))
                    return ExitStatus.success
                }
                let second = rest.first.map { " ('\($0)' is none of its subcommands)" } ?? ""
                console.error("\(first) needs a subcommand\(second)")
                console.standardError(groupHelp(first))
            } else {
                console.error("unknown command '\(first)'; see '\(program) --help'")
            }
            return ExitStatus.usage
        }
        let name = ([program] + command.words).joined(separator: " ")
        let commandConsole = Console(commandName: name)
        do throws(CommandFailure) {
            let parsed = try ParsedArguments(
                Array(arguments.dropFirst(command.words.count)),
                valueOptions: command.valueOptions,
                flagOptions: command.flagOptions
            )
            if parsed.wantsHelp {
                commandConsole.output(command.help)
                return ExitStatus.success
            }
            let status = try command.run(parsed, console: commandConsole)
            // Success with its output lost is no success: the result never reached the caller.
            if status == ExitStatus.success, let failure = Console.outputFailure.withLock({ $0 }) {
                commandConsole.error(StandardStreams.outputFailure(failure.text))
                return ExitStatus.failure
            }
            return status
        } catch {
            switch error {
            case .usage(let message):
                commandConsole.error("\(message)\nTry '\(name) --help'.")
                return ExitStatus.usage
            case .runtime(let message):
                commandConsole.error(message)
                return ExitStatus.failure
            }
        }
    }

    private func help(for words: [String], console: Console) -> Int32 {
        guard !words.isEmpty else {
            console.output(overview)
            return ExitStatus.success
        }
        guard let command = commands.first(where: { $0.words == words }) else {
            if words.count == 1, !group(words[0]).isEmpty {
                console.output(groupHelp(words[0]))
                return ExitStatus.success
            }
            console.error("no help for '\(words.joined(separator: " "))': unknown command")
            return ExitStatus.usage
        }
        console.output(command.help)
        return ExitStatus.success
    }

    /// The commands of the group named `word` (`asset` → `asset import`).
    private func group(_ word: String) -> [any Command.Type] {
        commands.filter { $0.words.count > 1 && $0.words[0] == word }
    }

    /// The usage of a group: its subcommands, each with its summary.
    private func groupHelp(_ word: String) -> String {
        let members = group(word)
        let width = members.map { $0.words.joined(separator: " ").count }.max() ?? 0
        let lines = members.map { command -> String in
            let name = command.words.joined(separator: " ")
            return "  " + name + String(repeating: " ", count: width - name.count + 2) + command.summary
        }
        return """
            usage: \(program) \(word) <subcommand> [options] [arguments]

            Subcommands:
            \(lines.joined(separator: "\n"))

            Run '\(program) \(word) <subcommand> --help' for a subcommand's options.

            """
    }

    private var overview: String {
        let width = commands.map { $0.words.joined(separator: " ").count }.max() ?? 0
        let lines = commands.map { command -> String in
            let name = command.words.joined(separator: " ")
            return "  " + name + String(repeating: " ", count: width - name.count + 2) + command.summary
        }
        return """
            usage: \(program) <command> [options] [arguments]

            Streams large blobs (files, URLs) in constant memory.

            Commands:
            \(lines.joined(separator: "\n"))

            Run '\(program) <command> --help' for a command's options.

            """
    }
}
