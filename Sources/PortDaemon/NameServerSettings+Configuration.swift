// NameServerSettings+Configuration: portd.conf(5) as the name server sees
// it. The one place where the configuration (Config/) meets the name
// server (NameServer/): policy decisions, limits, declared ports. The
// per-user instance serves its own uid only, whatever the file says.

import PortCore

extension NameServerSettings {
    /// The settings of an instance from its configuration.
    init(configuration c: PortdConfiguration, onlyUID: UInt32?, daemonUID: UInt32) {
        self.init(onlyUID: onlyUID)
        declaredPorts = c.declaredPorts.compactMap { d in
            guard let name = try? PortName(validating: d.name) else { return nil }  // validated at load time
            // Without CheckInUser=/CheckInGroup= only portd's own uid may check in (portd.conf(5)).
            let uids = d.checkInUIDs.isEmpty && d.checkInGIDs.isEmpty ? [daemonUID] : d.checkInUIDs
            let activation: PortActivator.Starter? =
                switch d.activation {
                case .none: nil
                case .command(let command): .command(command)
                case .unit(let unit): .unit(unit)
                }
            return DeclaredPort(
                name: name, checkInUIDs: Set(uids), checkInGIDs: Set(d.checkInGIDs), activation: activation)
        }
        // The system instance, like the D-Bus system bus, lets a name be
        // registered only where the policy allows it: without
        // DefaultRegister= no rule means deny, except for root and the uid
        // portd runs as. The per-user instance stays permissive.
        let denyByDefault = onlyUID == nil && !c.policy.defaultRegisterIsSet
        var registering = c
        if denyByDefault { registering.policy.defaultRegister = .deny }
        let privileged: Set<UInt32> = [0, daemonUID]
        mayRegister = { [registering] name, uid, gids in
            let decision = registering.registerDecision(name: name.description, uid: uid, gids: gids)
            return decision.allowed || (denyByDefault && decision.byDefault && privileged.contains(uid))
        }
        systemRegisterDefaultDenies = denyByDefault
        mayLookUp = { name, uid, gids in c.mayLookUp(name: name.value, uid: uid, gids: gids) }
        limits = NameRegistryLimits(
            namesPerClient: c.limits.namesPerClient, pendingLookupsPerClient: c.limits.pendingLookupsPerClient,
            watchesPerClient: c.limits.watchesPerClient, clientsPerUID: c.limits.clientsPerUID,
            clients: c.limits.maxClients, privilegedUIDs: privileged)
        if let n = CurrentProcess.descriptorLimit() {
            limits = DescriptorBudget(limit: n).applied(to: limits, privileged: privileged)
        }
        maximumRequestBytes = c.limits.maxRequestBytes
    }
}
