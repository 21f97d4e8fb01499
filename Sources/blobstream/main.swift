import Foundation

FileHandle.standardError.write(Data("usage: blobstream <subcommand> ...\n".utf8))
exit(64)
