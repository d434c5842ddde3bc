// Descriptors in tests: the raw number of a right's socket, for tests that
// poke it directly (send garbage, fill its queue) or hand it to a child;
// the right keeps owning it.

import PortMessaging
import PortSystem

extension SendRight {
    /// The number of the right's socket (-1 once it is invalidated).
    package var fd: Int32 { withDescriptor { $0.rawValue } ?? -1 }
}
