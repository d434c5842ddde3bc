// Timestamp: Unix milliseconds as a UTC date and time for people
// ("2026-11-21 16:47:01.234 UTC"), computed here (Howard Hinnant's
// days-to-civil algorithm) because the CLI does without Foundation.

enum Timestamp {
    static func utc(milliseconds: UInt64) -> String {
        let ms = Int64(clamping: milliseconds)
        let seconds = ms / 1000
        let days = seconds / 86_400
        let secondOfDay = seconds % 86_400
        // days since 1970-01-01 to (year, month, day), proleptic Gregorian.
        let z = days + 719_468
        let era = z / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let fraction = ms % 1000
        let f = fraction < 10 ? "00\(fraction)" : fraction < 100 ? "0\(fraction)" : "\(fraction)"
        let time = "\(two(secondOfDay / 3600)):\(two(secondOfDay % 3600 / 60)):\(two(secondOfDay % 60)).\(f)"
        return "\(year)-\(two(month))-\(two(day)) \(time) UTC"
    }
}
