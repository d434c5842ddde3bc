// OwnedDescriptors: several owned descriptors in order, where an array
// cannot hold them (Swift's Array needs Copyable elements): the descriptors
// of one received record (SCM_RIGHTS), the duplicates a child process gets.
//
// Invariants: the list is the one owner of every descriptor in it from the
// moment it is appended (a received one: from the moment recvmsg installed
// it); each is handed out at most once, by `take(at:)`, and every one not
// taken is closed by `closeAll()` or when the list ends, so none is leaked
// whatever path the caller takes (a record that fails validation closes
// them all by doing nothing). The storage is allocated once, at init, with
// a fixed capacity, so a list reused per message costs no allocation.

/// A fixed-capacity, ordered list of owned descriptors.
package struct OwnedDescriptors: ~Copyable {
    /// Numbers of the descriptors; -1 marks one taken out.
    private let slots: UnsafeMutableBufferPointer<Int32>
    /// How many slots are filled (taken ones included).
    package private(set) var count = 0

    /// An empty list with room for `capacity` descriptors.
    package init(capacity: Int) {
        slots = .allocate(capacity: max(capacity, 1))
    }

    deinit {
        OwnedDescriptors.close(slots, upTo: count)
        slots.deallocate()
    }

    /// How many descriptors the list can hold.
    var capacity: Int { slots.count }

    var isEmpty: Bool { count == 0 }

    /// Appends `descriptor`; the list owns it from now on.
    package mutating func append(_ descriptor: consuming OwnedDescriptor) {
        precondition(count < slots.count, "OwnedDescriptors: more than \(slots.count) descriptors")
        slots[count] = descriptor.take()
        count += 1
    }

    /// Appends a number the kernel has just installed in this process
    /// (SCM_RIGHTS): owned from this moment.
    mutating func append(installed number: Int32) {
        append(OwnedDescriptor(adopting: number))
    }

    /// Hands out the descriptor at `index`, once.
    package mutating func take(at index: Int) -> OwnedDescriptor {
        precondition(index >= 0 && index < count, "OwnedDescriptors: no descriptor \(index) of \(count)")
        let number = slots[index]
        precondition(number >= 0, "OwnedDescriptors: descriptor \(index) was already taken")
        slots[index] = -1
        return OwnedDescriptor(adopting: number)
    }

    /// Lends the descriptor at `index` (which must not have been taken).
    package func withDescriptor<R: ~Copyable, E: Error>(
        at index: Int, _ body: (borrowing OwnedDescriptor) throws(E) -> R
    ) throws(E) -> R {
        precondition(index >= 0 && index < count && slots[index] >= 0, "OwnedDescriptors: no descriptor \(index)")
        return try OwnedDescriptor.lending(slots[index], to: body)  // the list still owns it
    }

    /// The number of the descriptor at `index`, for a system call that
    /// only borrows it (posix_spawn's file actions). PortSystem only.
    func number(at index: Int) -> Int32 {
        precondition(index >= 0 && index < count && slots[index] >= 0, "OwnedDescriptors: no descriptor \(index)")
        return slots[index]
    }

    /// Whether any descriptor in the list (not taken) was opened with
    /// O_PATH (`Descriptor.isPathOnly`): what a received record is checked
    /// for before its descriptors are used.
    package func containsPathOnly() throws(SystemCallError) -> Bool {
        for i in 0..<count where slots[i] >= 0 {
            if try OwnedDescriptor.lending(slots[i], to: { (fd) throws(SystemCallError) in try Descriptor.isPathOnly(fd) }) {
                return true
            }
        }
        return false
    }

    /// Closes every descriptor not taken and empties the list (its storage
    /// is kept for the next use).
    package mutating func closeAll() {
        OwnedDescriptors.close(slots, upTo: count)
        count = 0
    }

    private static func close(_ slots: UnsafeMutableBufferPointer<Int32>, upTo count: Int) {
        for i in 0..<count where slots[i] >= 0 {
            OwnedDescriptor(adopting: slots[i]).close()
            slots[i] = -1
        }
    }
}
