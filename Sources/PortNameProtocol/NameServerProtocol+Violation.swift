// NameServerProtocol+Violation: what parsing a name-server message says
// when the message does not follow the protocol (a reply without a word, a
// field that is not a number, an owner that is not "pid=…,uid=…"). Pure:
// the client turns it into NameServerError.protocolError, with the same text.

extension NameServerProtocol {
    /// A message that does not follow the protocol, and how.
    package struct Violation: Error, Equatable, Sendable, CustomStringConvertible {
        package let message: String

        package init(_ message: String) {
            self.message = message
        }

        package var description: String { message }
    }
}
