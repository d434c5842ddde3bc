// BenchThread: a pthread running a Swift closure, joined by its starter.
// The closure is handed over boxed through pthread_create's argument and run
// by a global C-convention function: a closure literal passed straight to
// pthread_create from main-actor code traps at run time in Swift 6
// (a closure literal handed to another thread from there traps in Swift 6). Nothing else is shared by the thread and its starter.

import Glibc

final class BenchThread {
    private final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    private var thread = pthread_t()

    /// Starts `body` on a new thread.
    init(_ body: @escaping @Sendable () -> Void) {
        let arg = Unmanaged.passRetained(Box(body)).toOpaque()
        let r = pthread_create(&thread, nil, benchThreadEntry, arg)
        if r != 0 { Report.fail("pthread_create: \(r)") }
    }

    /// Waits for the thread to finish.
    func join() {
        pthread_join(thread, nil)
    }

    fileprivate static func run(_ arg: UnsafeMutableRawPointer) {
        Unmanaged<Box>.fromOpaque(arg).takeRetainedValue().body()
    }
}

private func benchThreadEntry(_ arg: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    BenchThread.run(arg!)
    return nil
}
