// PortdLogHandler: what portd's two log handlers (stderr lines, journal
// fields) share: handler-level metadata, the metadata provider, and how
// the three are merged for one event (the event's own entries win).

import Logging

protocol PortdLogHandler: LogHandler {}

extension PortdLogHandler {
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// The handler's metadata, then the provider's, then the event's.
    func mergedMetadata(_ event: LogEvent) -> Logger.Metadata {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        return merged
    }
}
