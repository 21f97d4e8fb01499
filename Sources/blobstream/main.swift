import Foundation

// The commands of `blobstream`. A new command is a type conforming to `Command` in its own
// file, added to this list.
let commands: [any Command.Type] = [
    ChecksumCommand.self,
    AssetImportCommand.self,
    UploadCommand.self,
    PutCommand.self,
    CatCommand.self,
    S3CopyCommand.self,
    S3AbortCommand.self,
    S3ListUploadsCommand.self,
]

// Before anything opens a file or a socket, which would take the number of a closed one.
_ = StandardStreams.closedAtStart
exit(Dispatcher(program: "blobstream", commands: commands).run(Array(CommandLine.arguments.dropFirst())))
