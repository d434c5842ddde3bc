// QuotedWords: splitting a configuration value into words, for the keys
// whose value is a list (principals, users, groups, a command line).
//
// Rules (a small subset of sh(1), enough to write any word):
//   - words are separated by spaces and tabs;
//   - "..." quotes: blanks inside belong to the word; a backslash escapes
//     the next character (so \" and \\ are a quote and a backslash);
//   - '...' quotes: everything up to the next ' is literal;
//   - outside quotes a backslash escapes the next character;
//   - quoted and unquoted parts join into one word (a"b c"d is "ab cd"),
//     and "" is an empty word;
//   - an unterminated quote or a backslash at the very end is an error.
// No variables, no globbing, no C escapes such as \n. Pure.

enum QuotedWords {
    /// The words of `value`.
    static func split(_ value: String) throws(InvalidValue) -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var iterator = value.makeIterator()

        while let c = iterator.next() {
            switch c {
            case " ", "\t":
                if inWord {
                    words.append(current)
                    current = ""
                    inWord = false
                }
            case "\\":
                guard let escaped = iterator.next() else {
                    throw InvalidValue("a backslash at the end of '\(value)' escapes nothing")
                }
                current.append(escaped)
                inWord = true
            case "\"":
                inWord = true
                var closed = false
                while let q = iterator.next() {
                    if q == "\"" {
                        closed = true
                        break
                    }
                    if q == "\\" {
                        guard let escaped = iterator.next() else { break }
                        current.append(escaped)
                    } else {
                        current.append(q)
                    }
                }
                guard closed else { throw InvalidValue("unterminated \" in '\(value)'") }
            case "'":
                inWord = true
                var closed = false
                while let q = iterator.next() {
                    if q == "'" {
                        closed = true
                        break
                    }
                    current.append(q)
                }
                guard closed else { throw InvalidValue("unterminated ' in '\(value)'") }
            default:
                current.append(c)
                inWord = true
            }
        }
        if inWord { words.append(current) }
        return words
    }
}
