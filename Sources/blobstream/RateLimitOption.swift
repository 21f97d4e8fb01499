import BlobStream

/// The `--limit-rate RATE` option (curl's name and units): the most bytes per second a command
/// moves. RATE is a whole number of bytes, optionally followed by K, M or G (any case: KiB,
/// MiB, GiB, as curl reads them).
enum RateLimitOption {
    /// The option's name, for the commands' `valueOptions`.
    static let name = "--limit-rate"

    /// The limit the arguments ask for, or `nil` without the option.
    /// - Throws: ``CommandFailure/usage(_:)`` for 0, a negative or unparsable rate.
    static func limit(_ arguments: ParsedArguments) throws(CommandFailure) -> RateLimit? {
        guard let text = arguments.values[name] else { return nil }
        return try parse(text)
    }

    /// The limit of `text`.
    static func parse(_ text: String) throws(CommandFailure) -> RateLimit {
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        let multipliers: [String: Int64] = ["": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30]
        guard !digits.isEmpty, let number = Int64(digits),
              let multiplier = multipliers[text.dropFirst(digits.count).lowercased()] else {
            throw .usage("--limit-rate takes bytes per second above 0 (digits, optionally followed by K, M or G), not '\(text)'")
        }
        let (rate, overflow) = number.multipliedReportingOverflow(by: multiplier)
        guard !overflow, let limit = RateLimit(bytesPerSecond: rate) else {
            throw .usage("--limit-rate takes bytes per second above 0 and below 8 EiB, not '\(text)'")
        }
        return limit
    }
}
