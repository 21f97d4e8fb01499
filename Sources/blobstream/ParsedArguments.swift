/// A command's arguments, parsed by hand: `--name value`, `--name=value`, flags, positional
/// arguments, and `--` to end options (so a file named `--odd` can be given).
struct ParsedArguments {
    /// The values of the options that were given, by name (the last one wins).
    private(set) var values: [String: String] = [:]
    /// Every option value given, in command-line order, for options that may repeat under
    /// more than one name (`-H` and `--header`).
    private(set) var orderedValues: [(name: String, value: String)] = []
    /// The flags that were given.
    private(set) var flags: Set<String> = []
    /// Everything that is not an option, in order.
    private(set) var positional: [String] = []
    /// Whether `--help` or `-h` appeared before `--`.
    private(set) var wantsHelp = false

    /// The last value given under any of `names` (an option and its short alias: `-a` and
    /// `--algorithm`), as the last one wins for a single name.
    func lastValue(of names: String...) -> String? {
        orderedValues.last { names.contains($0.name) }?.value
    }

    /// Parses `arguments` for a command with the given options.
    /// - Throws: ``CommandFailure/usage(_:)`` for an unknown option or a missing value.
    init(_ arguments: [String], valueOptions: Set<String>, flagOptions: Set<String>) throws(CommandFailure) {
        var rest = arguments[...]
        var optionsEnded = false
        while let argument = rest.popFirst() {
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                positional.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            if argument == "--help" || argument == "-h" {
                wantsHelp = true
                continue
            }
            let (name, inlineValue) = Self.split(argument)
            if valueOptions.contains(name) {
                guard let value = inlineValue ?? rest.popFirst() else {
                    throw .usage("\(name) needs a value")
                }
                values[name] = value
                orderedValues.append((name, value))
            } else if flagOptions.contains(name) {
                guard inlineValue == nil else { throw .usage("\(name) takes no value") }
                flags.insert(name)
            } else {
                throw .usage("unknown option \(name)")
            }
        }
    }

    /// `--name=value` → (`--name`, `value`); `--name` → (`--name`, nil).
    private static func split(_ argument: String) -> (String, String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }
}
