/// Byte counts on the command line (`--chunk-size`, `--offset`): digits with an optional
/// binary suffix, checked against the option's bounds, so no input can overflow or trap.
enum ByteCountArgument {
    private static let suffixes: [(String, Int64)] = [
        ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40),
        ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30), ("T", 1 << 40),
    ]

    /// The value of `text` (`4194304`, `4M`, `64KiB`), which must lie in `bounds`.
    /// - Throws: ``CommandFailure/usage(_:)`` naming `option`, its bounds and `text` for
    ///   anything else: signs, fractions, unknown suffixes, values that overflow or are out of
    ///   bounds.
    static func parse(_ text: String, option: String, bounds: ClosedRange<Int64>) throws(CommandFailure) -> Int64 {
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        let suffix = text.dropFirst(digits.count)
        let multiplier = suffix.isEmpty ? 1 : suffixes.first { $0.0 == suffix }?.1
        guard !digits.isEmpty, let multiplier, let number = Int64(digits) else {
            throw failure(text, option: option, bounds: bounds)
        }
        let (value, overflow) = number.multipliedReportingOverflow(by: multiplier)
        guard !overflow, bounds.contains(value) else { throw failure(text, option: option, bounds: bounds) }
        return value
    }

    private static func failure(_ text: String, option: String, bounds: ClosedRange<Int64>) -> CommandFailure {
        let range = bounds.upperBound == .max
            ? "of \(describe(bounds.lowerBound)) or more"
            : "from \(describe(bounds.lowerBound)) to \(describe(bounds.upperBound))"
        return .usage("\(option) takes a byte count \(range) (digits, optionally followed by K, M, G or T, or KiB to TiB), not '\(text)'")
    }

    /// `65536 (64 KiB)`; plain digits when not a whole number of KiB.
    static func describe(_ value: Int64) -> String {
        for (name, size) in [("GiB", Int64(1) << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] where value >= size && value % size == 0 {
            return "\(value) (\(value / size) \(name))"
        }
        return "\(value)"
    }
}
