import BlobUpload
import Foundation

/// What `upload` and `s3 cp` share about the upload journal: a re-run of the same command
/// continues the upload by default (the journal under `$XDG_STATE_HOME/blobstream`), and
/// `--no-resume` starts afresh; what the journal did is said on standard error.
enum JournalOption {
    /// The flag that turns the journal off.
    static let flag = "--no-resume"

    /// The journal for this run: `nil` for input read once (a pipe's bytes cannot be read
    /// again). Without a directory for it, the command warns that the upload cannot be resumed
    /// automatically.
    static func journal(_ arguments: ParsedArguments, readOnce: Bool, console: Console) throws(CommandFailure) -> (any UploadJournal)? {
        if !continues(arguments), arguments.values["--resume"] != nil { throw .usage("--no-resume and --resume contradict each other") }
        guard !readOnce else { return nil }
        guard let directory = FileUploadJournal.defaultDirectory() else {
            console.error("warning: neither XDG_STATE_HOME nor HOME is set, so there is no upload journal: "
                + "this upload cannot be resumed automatically")
            return nil
        }
        return FileUploadJournal(directory: directory)
    }

    /// Whether the journal's upload is continued: not with `--no-resume`, which starts a new
    /// upload that replaces the journal's entry (an S3 one it had is aborted).
    static func continues(_ arguments: ParsedArguments) -> Bool {
        !arguments.flags.contains(flag)
    }

    /// The line for `notice` about the upload of `subject`; `upload` names the upload, whose
    /// URL may carry a password (hidden by the console).
    static func message(_ notice: UploadJournalNotice, subject: String) -> String {
        switch notice {
        case .found(let upload):
            return "\(subject): the upload journal has \(upload); asking the server how far it got (--no-resume starts afresh)"
        case .resuming(let upload, let offset):
            return "\(subject): resuming \(upload) at \(offset) bytes (from the upload journal; --no-resume starts afresh)"
        case .startingOver(let upload, let reason):
            return "\(subject): not resuming \(upload): \(reason); starting a new upload"
        case .unavailable(let error):
            return "warning: \(error); this upload cannot be resumed automatically"
        case .damaged(let error):
            return "warning: \(error)"
        }
    }
}
