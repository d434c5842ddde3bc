// DescriptorBudget: how many descriptors portd may hold for its clients,
// derived from its RLIMIT_NOFILE (portd.conf(5), DESCRIPTOR BUDGET):
//   N   the soft limit, raised to the hard limit at start;
//   own = max(32, N/16), never held for clients (control socket, run loop,
//         signals, journal, declared ports, socket files being made);
//   privileged reserve = max(64, N/8), held only for root and portd's own
//         uid;
//   in all (every client)       = N - own;
//   pool (all other uids)       = N - own - privileged reserve;
//   per uid (each other uid)    = pool / 2.
// So no one uid can take the pool, the other uids together cannot take the
// privileged reserve, and nobody can take portd's own.
//
// Invariants: pure; every bound is at least 1.

struct DescriptorBudget: Equatable, Sendable {
    let limit: Int

    var own: Int { max(32, limit / 16) }
    var privilegedReserve: Int { max(64, limit / 8) }
    var inAll: Int { max(1, limit - own) }
    var pool: Int { max(1, limit - own - privilegedReserve) }
    var perUID: Int { max(1, pool / 2) }

    /// `limits` bounded by this budget; `privileged` are root and portd's own uid.
    func applied(to limits: NameRegistryLimits, privileged: Set<UInt32>) -> NameRegistryLimits {
        var l = limits
        l.descriptorsInAll = inAll
        l.descriptors = pool
        l.descriptorsPerUID = perUID
        l.privilegedUIDs = privileged
        return l
    }
}
