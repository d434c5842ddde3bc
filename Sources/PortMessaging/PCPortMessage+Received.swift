// PCPortMessage+Received: the fields a receiving port sets on a message
// (who sent it, on which connection, who made that connection, the reply
// port a request carried), for code that hands a handler a message as if a
// port had received it without a socket in between: the fuzz target of
// portd's request handling (Fuzz/PortdRequests).
//
// Invariants: `package` only, so no user of PortCore can forge a sender;
// PCPort sets the same fields the same way (PCPort.deliverRequest).

import PortSystem

extension PCPortMessage {
    /// Sets what a port's receive path would have set.
    package mutating func setReceived(
        sender: Credentials?, connectionID: UInt64?, connectionCredentials: Credentials?, passedReplyPort: SendRight?,
        expectsReply: Bool
    ) {
        self.sender = sender
        self.connectionID = connectionID
        self.connectionCredentials = connectionCredentials
        self.passedReplyPort = passedReplyPort
        self.expectsReply = expectsReply
    }
}
