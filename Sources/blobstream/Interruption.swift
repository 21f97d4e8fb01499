import Foundation
internal import SystemCalls

/// Ctrl-C (SIGINT) and SIGTERM while a command works: instead of dying mid-line, the command
/// stops its work, says what was left undone (and how to continue), and exits with 128 plus
/// the signal's number, as a shell reports a process killed by it (130, 143).
///
/// A second signal ends the process at once, for work that does not stop.
final class Interruption: @unchecked Sendable {
    private static let signals = [SIGINT, SIGTERM]
    private let lock = NSLock()
    private var received: Int32?
    private var sources: [DispatchSourceSignal] = []

    /// Starts catching the signals; `stop` is called once, on a background queue, with the
    /// first one.
    init(stop: @escaping @Sendable () -> Void) {
        for number in Self.signals {
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            ProcessSignals.ignore(number)
            source.setEventHandler { [weak self] in
                guard let self else { return }
                let first = self.lock.withLock { () -> Bool in
                    defer { self.received = self.received ?? number }
                    return self.received == nil
                }
                if first { stop() } else { ProcessSignals.exitImmediately(status: 128 + number) }
            }
            source.resume()
            sources.append(source)
        }
    }

    deinit {
        end()
    }

    /// The signal that arrived first, if any.
    var signal: Int32? { lock.withLock { received } }

    /// The exit status for the signal that arrived: 128 + its number.
    var exitStatus: Int32? { signal.map { 128 + $0 } }

    /// What the signal is called in messages.
    var signalName: String { signal == SIGTERM ? "terminated (SIGTERM)" : "interrupted" }

    /// Stops catching the signals: they act as by default again.
    func end() {
        for source in sources { source.cancel() }
        sources = []
        for number in Self.signals { ProcessSignals.restoreDefault(number) }
    }
}
