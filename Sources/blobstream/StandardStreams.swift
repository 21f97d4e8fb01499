import Foundation

/// Standard input, output and error as the process found them. One started with one of them
/// closed (`<&-`, `>&-`) would hand that number to the next file or socket it opens: "standard
/// input" would then read a journal file or a server's answer, and output would go into a
/// connection. So a closed one is filled at start with `/dev/null`, opened the wrong way round
/// (write-only for input, read-only for output) so that using it fails instead of reading
/// nothing or writing nowhere, and the commands name it as closed.
enum StandardStreams {
    /// Which of 0, 1 and 2 were closed when the process started; the first use fills them.
    static let closedAtStart: Set<Int32> = {
        var closed: Set<Int32> = []
        for descriptor in Int32(0)...2 where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
            // The lowest free number: this one, since those below it are open by now.
            let opened = open("/dev/null", descriptor == 0 ? O_WRONLY : O_RDONLY)
            if opened >= 0, opened != descriptor {
                _ = dup2(opened, descriptor)
                close(opened)
            }
            closed.insert(descriptor)
        }
        return closed
    }()

    /// Whether standard input was closed at start.
    static var inputIsClosed: Bool { closedAtStart.contains(0) }

    /// Why writing standard output failed with `failure`.
    static func outputFailure(_ failure: String) -> String {
        closedAtStart.contains(1)
            ? "standard output is closed (the command was started with >&-); nothing was printed"
            : "standard output: write failed: \(failure)"
    }
}
