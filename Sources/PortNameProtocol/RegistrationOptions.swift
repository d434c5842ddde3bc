// RegistrationOptions: how a REGISTER request may share the name, D-Bus's
// RequestName flags, and their option words (NameServerProtocol
// .RegisterOption): the client writes them (`words`), portd reads them
// (`init(word:)`) and its registry decides by them.

/// How a REGISTER request may share the name.
public struct RegistrationOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// A later registrant asking `replaceExisting` may take the name from us.
    public static let allowReplacement = RegistrationOptions(rawValue: 1 << 0)
    /// Take the name from an owner that allows replacement.
    public static let replaceExisting = RegistrationOptions(rawValue: 1 << 1)
    /// Answer `.alreadyOwned` instead of queueing.
    public static let doNotQueue = RegistrationOptions(rawValue: 1 << 2)

    /// Each option with its word, in the fixed order of `words`.
    private static let all: [(RegistrationOptions, NameServerProtocol.RegisterOption)] = [
        (.allowReplacement, .allowReplacement), (.replaceExisting, .replaceExisting), (.doNotQueue, .doNotQueue),
    ]

    /// The protocol's option words, in a fixed order.
    package var words: [String] {
        Self.all.filter { contains($0.0) }.map(\.1.rawValue)
    }

    /// The option an option word stands for, or nil for a word the protocol lacks.
    package init?(word: String) {
        guard let known = NameServerProtocol.RegisterOption(rawValue: word),
            let option = Self.all.first(where: { $0.1 == known })?.0
        else { return nil }
        self = option
    }
}
