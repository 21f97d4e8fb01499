internal import HTTP1
/// The validators of one response that name the blob's version: what the first response pins
/// and every later response is compared with.
///
/// The rule, for every later response that carries blob bytes (`200` and `206`):
/// - the `ETag` field must be identical, byte for byte, to the pinned one, and absent if the
///   pinned response had none; a tag that appears, changes or disappears is another version;
/// - when the pinned `ETag` is not a strong one (weak `W/"…"`, or none), the `Last-Modified`
///   field must be identical too, by the same rule: a weak tag or a date alone is no proof that
///   the bytes are the same, so every validator the server gave is held to.
/// A strong tag alone decides because it changes whenever a byte does (RFC 9110 §8.8.3).
///
/// Only a strong validator may go in `If-Range` (RFC 9110 §13.1.5): the strong `ETag`, or else a
/// `Last-Modified` that is strong, which a client can know only when the same response's `Date`
/// is at least one second later (§8.8.2.2): no second change could hide in that second. A weak
/// tag or a weak date is compared on every response but never sent.
struct HTTPBlobVersion: Sendable, Equatable {
    /// `ETag` as sent, strong or weak.
    var entityTag: String?
    /// `Last-Modified` as sent.
    var lastModified: String?
    /// Whether `lastModified` is a strong validator: `Date` is at least a second later.
    var lastModifiedIsStrong: Bool

    /// The version `head` names.
    init(_ head: HTTPResponseHead) {
        entityTag = head["etag"].flatMap { $0.isEmpty ? nil : $0 }
        lastModified = head["last-modified"].flatMap { $0.isEmpty ? nil : $0 }
        if let lastModified, let modified = Self.seconds(inHTTPDate: lastModified),
           let date = head["date"].flatMap(Self.seconds(inHTTPDate:)) {
            lastModifiedIsStrong = date - modified >= 1
        } else {
            lastModifiedIsStrong = false
        }
    }

    /// Whether `entityTag` is a strong tag.
    var hasStrongEntityTag: Bool { entityTag.map { !$0.hasPrefix("W/") } ?? false }

    /// The value for `If-Range`, or `nil` when the version has no strong validator.
    var ifRangeValue: String? {
        if hasStrongEntityTag { return entityTag }
        return lastModifiedIsStrong ? lastModified : nil
    }

    /// The token ``BlobSourceDescription/version`` reports: the tag, else the date, else `nil`.
    var token: String? { entityTag ?? lastModified }

    /// Why `later` is not this version, or `nil` when it is; see the type's rule.
    func mismatch(with later: HTTPBlobVersion) -> String? {
        if let reason = Self.compare("ETag", entityTag, later.entityTag) { return reason }
        if hasStrongEntityTag { return nil }
        return Self.compare("Last-Modified", lastModified, later.lastModified)
    }

    /// Why a `416` (which carries no blob bytes, and need not name a version) is not of this
    /// version: only the validators it does name are compared.
    func mismatch(withEndOf later: HTTPBlobVersion) -> String? {
        if later.entityTag != nil, let reason = Self.compare("ETag", entityTag, later.entityTag) { return reason }
        if hasStrongEntityTag || later.lastModified == nil { return nil }
        return Self.compare("Last-Modified", lastModified, later.lastModified)
    }

    private static func compare(_ field: String, _ pinned: String?, _ later: String?) -> String? {
        switch (pinned, later) {
        case let (pinned?, later?) where pinned != later: return "another version: the \(field) was \(pinned) and is now \(later)"
        case (let pinned?, nil): return "another version: the \(field) was \(pinned) and is no longer sent"
        case (nil, let later?): return "another version: no \(field) was sent and now it is \(later)"
        default: return nil
        }
    }

    /// Seconds since 1970 of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only form a
    /// server may generate (RFC 9110 §5.6.7); `nil` for anything else, which is then no proof
    /// of strength.
    static func seconds(inHTTPDate text: String) -> Int64? {
        let parts = text.split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT",
              let day = Int64(parts[1]), let monthIndex = months.firstIndex(of: String(parts[2])),
              let year = Int64(parts[3]), parts[1].count == 2, parts[3].count == 4 else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 }),
              let hour = Int64(clock[0]), let minute = Int64(clock[1]), let second = Int64(clock[2]),
              (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        // Days from the civil date (Howard Hinnant's algorithm), March-based years.
        let month = Int64(monthIndex + 1)
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400 + hour * 3600 + minute * 60 + second
    }
}
