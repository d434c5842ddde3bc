// OwnershipOptions: how `register` and `listen` take their name: REGISTER
// with D-Bus's options (--allow-replacement, --replace, --no-queue), or,
// with --declared, CHECKIN of a port declared in portd.conf (launchd's
// check-in). A taken name queues us unless --no-queue: portctl then waits
// for the name (up to --timeout when given) and says so on standard error.
// What becomes of us when a --replace takes the name differs by verb
// (listen exits 74, register's command keeps running), so the group is
// generic over the verb, whose --help says its own case (portctl(1),
// "Ownership options").

import ArgumentParser
import PortCore
import Synchronization

/// A verb that takes a name with OwnershipOptions: what its --help says of
/// --allow-replacement.
protocol OwnershipVerb {
    static var allowReplacementHelp: String { get }
}

enum ListenOwnership: OwnershipVerb {
    static let allowReplacementHelp =
        "Let a later --replace take the name from us: listen then handles what already arrived and exits with status 74."
}

enum RegisterOwnership: OwnershipVerb {
    static let allowReplacementHelp =
        "Let a later --replace take the name from us: COMMAND then keeps running with the connections it has; new ones go to the new owner."
}

struct OwnershipOptions<Verb: OwnershipVerb>: ParsableArguments {
    @Flag(help: ArgumentHelp(Verb.allowReplacementHelp))
    var allowReplacement = false

    @Flag(name: .customLong("replace"), help: "Take the name from an owner that allows replacement.")
    var replaceExisting = false

    @Flag(help: "Fail (status 1) instead of queueing when the name is taken.")
    var noQueue = false

    @Flag(help: "Claim a port declared in portd.conf (check in) instead of registering a name.")
    var declared = false

    func validate() throws {
        if declared && (allowReplacement || replaceExisting || noQueue) {
            throw ValidationError("--declared takes none of --allow-replacement, --replace, --no-queue")
        }
    }

    var registrationOptions: RegistrationOptions {
        var o: RegistrationOptions = []
        if allowReplacement { o.insert(.allowReplacement) }
        if replaceExisting { o.insert(.replaceExisting) }
        if noQueue { o.insert(.doNotQueue) }
        return o
    }

    /// Takes `name` on `server`; returns its port (unscheduled). Waits in
    /// the queue when the name is taken, running this thread's loop.
    /// `onLost` runs on this thread's loop when a --replace of another
    /// client takes the name from us later (NAME_LOST).
    func take(
        _ name: String, on server: PortNameServer, connection: ConnectionOptions, output: OutputOptions,
        onLost: ((NameOwner.Process) -> Void)? = nil
    ) throws(Failure) -> PCPort {
        if declared {
            do {
                switch try server.checkIn(declaredName: name) {
                case .checkedIn(let port): return port
                case .notDeclared: throw Failure(.nameNotFound, "\(name) is not a declared port")
                }
            } catch let error as Failure {
                throw error
            } catch let error as NameServerError {
                throw Failure(error)
            } catch {
                throw Failure(.failure, "\(error)")
            }
        }
        let loop = PCRunLoop.current
        let acquired = Mutex<PCPort?>(nil)
        let outcome: RegistrationOutcome
        do {
            outcome = try server.register(
                name, options: registrationOptions, loop: loop,
                onAcquire: { port in
                    acquired.withLock { $0 = port }
                    loop.stop()
                }, onLost: allowReplacement ? onLost : nil)
        } catch {
            throw Failure(error)
        }
        switch outcome {
        case .registered(let port):
            return port
        case .alreadyOwned(let owner):
            throw Failure(.failure, "\(name) is already owned by \(owner)")
        case .queued:
            let lost = Mutex(false)
            do {
                try server.onConnectionLoss(in: loop, forMode: .default) {
                    lost.withLock { $0 = true }
                    loop.stop()
                }
            } catch {
                throw Failure(error)
            }
            output.notice("\(name) is taken; queued for it")
            let deadline = connection.explicitTimeout.map { MonotonicInstant.now() + $0 } ?? .distantFuture
            while true {
                if let port = acquired.withLock({ $0 }) { return port }
                if lost.withLock({ $0 }) {
                    throw Failure(.portInvalid, "portd closed the connection while \(name) was queued")
                }
                if MonotonicInstant.now() >= deadline {
                    throw Failure(.timedOut, "\(name) stayed taken for \(connection.timeoutText)")
                }
                _ = loop.runInMode(.default, before: deadline, returnAfterSourceHandled: true)
            }
        }
    }
}
