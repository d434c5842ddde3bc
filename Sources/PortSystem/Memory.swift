// Memory: giving freed heap memory back to the kernel (glibc's malloc_trim),
// for a daemon whose working set shrinks a lot (portd after many clients
// leave): glibc keeps freed pages in its arenas otherwise.

import CPortSystem

package enum Memory {
    /// Returns the free pages at the top of the heap and inside its arenas
    /// to the kernel; true when some were. Costs a walk of the heap.
    /// The corresponding C function is `malloc_trim`.
    @discardableResult
    package static func returnFreePages() -> Bool { port_malloc_trim() == 1 }
}
