import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// The file-backed upload journal: entries survive whole or not at all, many writers at once
/// never damage one, damaged and foreign files are set aside, old entries expire, and a
/// directory that cannot be written is an error, not a crash.
@Suite struct FileUploadJournalTests {
    static func entry(_ key: UploadJournalKey, parts: Int = 0, version: String = "1:2:3") -> UploadJournalEntry {
        UploadJournalEntry(
            key: key, sourceVersion: version, length: 1 << 30,
            upload: .s3(upload: UploadJournalS3Upload(
                uploadID: "upload-\(parts)", partSize: 8 << 20, checksumAlgorithm: "CRC32C",
                parts: (0..<parts).map { UploadJournalPart(number: $0 + 1, size: 8 << 20, eTag: "\"e\($0)\"", checksum: "c\($0)==") })))
    }

    static let key = UploadJournalKey(source: "/data/video.mp4", destination: "http://127.0.0.1:18090/files/")

    @Test func anEntryIsStoredPrivatelyReadBackAndRemoved() throws {
        let directory = try TempFiles.makeDirectory(prefix: "journal")
        defer { TempFiles.remove(directory) }
        let journal = FileUploadJournal(directory: directory + "/state/blobstream/uploads")
        #expect(try journal.entry(for: Self.key) == nil)
        let written = Self.entry(Self.key, parts: 3)
        try journal.record(written)
        let read = try #require(try journal.entry(for: Self.key))
        #expect(read.upload == written.upload && read.sourceVersion == written.sourceVersion && read.key == written.key)
        #expect(abs(read.updated.timeIntervalSince(written.updated)) < 0.001)
        let permissions = { (path: String) in (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1 }
        #expect(try permissions(journal.directory) == 0o700)
        #expect(try permissions(journal.path(of: Self.key)) == 0o600)
        try journal.remove(Self.key)
        #expect(try journal.entry(for: Self.key) == nil)
        try journal.remove(Self.key)
    }

    @Test func aWriterThatDiedBeforeItsRenameLeavesTheOldEntry() throws {
        let directory = try TempFiles.makeDirectory(prefix: "journal")
        defer { TempFiles.remove(directory) }
        let journal = FileUploadJournal(directory: directory)
        try journal.record(Self.entry(Self.key, parts: 1))
        // What a writer killed between its temporary file and the rename leaves: a whole new
        // entry, and one cut short, under temporary names.
        let newer = try JSONEncoder().encode(StoredEntry(entry: Self.entry(Self.key, parts: 2)))
        let whole = directory + "/" + FileUploadJournal.temporaryPrefix + "dead-writer-1"
        let cut = directory + "/" + FileUploadJournal.temporaryPrefix + "dead-writer-2"
        try newer.write(to: URL(fileURLWithPath: whole))
        try newer.prefix(newer.count / 2).write(to: URL(fileURLWithPath: cut))
        let read = try #require(try journal.entry(for: Self.key))
        #expect(read.upload == Self.entry(Self.key, parts: 1).upload)
        #expect(!FileManager.default.fileExists(atPath: whole) && !FileManager.default.fileExists(atPath: cut))
    }

    @Test func threadsWritingAtOnceNeverLeaveADamagedEntry() async throws {
        let directory = try TempFiles.makeDirectory(prefix: "journal")
        defer { TempFiles.remove(directory) }
        let failures = Locked<[String]>([])
        // Each thread has a journal of its own (its own lock descriptor, as another process
        // would), all in one directory: one shared key, and one key per thread.
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<6 {
                group.addTask {
                    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                        onOwnThread {
                            let journal = FileUploadJournal(directory: directory)
                            let own = UploadJournalKey(source: "/thread/\(thread)", destination: "d")
                            for round in 0..<60 {
                                do {
                                    try journal.record(Self.entry(Self.key, parts: round % 7))
                                    try journal.record(Self.entry(own, parts: round))
                                    guard case .s3(let upload)? = try journal.entry(for: own)?.upload, upload.parts.count == round else {
                                        failures.mutate { $0.append("thread \(thread) round \(round): its own entry is not the one written") }
                                        continue
                                    }
                                    _ = try journal.entry(for: Self.key)
                                    if round % 10 == 9 { try journal.remove(Self.key) }
                                } catch {
                                    failures.mutate { $0.append("thread \(thread) round \(round): \(error)") }
                                }
                            }
                            done.resume()
                        }
                    }
                }
            }
        }
        #expect(failures.value.isEmpty, "\(failures.value.prefix(5))")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(!names.contains { $0.contains("damaged") || $0.hasPrefix(FileUploadJournal.temporaryPrefix) }, "\(names)")
    }

    @Test(arguments: [
        ("garbage", Data("not json at all {".utf8)),
        ("truncated", Data(#"{"format":"blobstream-upload-journal-1","entry":{"key":"#.utf8)),
        ("foreign", Data(#"{"format":"someone-elses-tool-3","entry":{}}"#.utf8)),
        ("empty", Data()),
    ])
    func aDamagedOrForeignFileIsSetAsideAndNotTrusted(_ kind: String, _ contents: Data) throws {
        let directory = try TempFiles.makeDirectory(prefix: "journal")
        defer { TempFiles.remove(directory) }
        let journal = FileUploadJournal(directory: directory)
        try journal.record(Self.entry(Self.key))
        let path = journal.path(of: Self.key)
        try contents.write(to: URL(fileURLWithPath: path))
        var setAside: String?
        #expect {
            _ = try journal.entry(for: Self.key)
        } throws: { error in
            guard case .damaged(let damaged, let moved, _) = error as? UploadJournalError, damaged == path else { return false }
            setAside = moved
            return true
        }
        let moved = try #require(setAside, "\(kind)")
        #expect(FileManager.default.contents(atPath: moved) == contents)
        #expect(try journal.entry(for: Self.key) == nil)
        // Writable again.
        try journal.record(Self.entry(Self.key))
        #expect(try journal.entry(for: Self.key) != nil)
    }

    @Test func anEntryFiledUnderAnotherKeyIsSetAside() throws {
        let directory = try TempFiles.makeDirectory(prefix: "journal")
        defer { TempFiles.remove(directory) }
        let journal = FileUploadJournal(directory: directory)
        let other = UploadJournalKey(source: "/data/other.mp4", destination: Self.key.destination)
        try journal.record(Self.entry(other))
        try FileManager.default.copyItem(atPath: journal.path(of: other), toPath: journal.path(of: Self.key))
        #expect(throws: UploadJournalError.self) { try journal.entry(for: Self.key) }
        #expect(try journal.entry(for: Self.key) == nil)
        #expect(try journal.entry(for: other) != nil)
    }

    @Test func entriesExpireAfterTheMaximumAge() throws {
        let directory = try TempFiles.makeDirectory(prefix: "journal")
        defer { TempFiles.remove(directory) }
        let journal = FileUploadJournal(directory: directory, maximumAge: 3600)
        let old = UploadJournalKey(source: "/data/old", destination: "d")
        try journal.record(Self.entry(old))
        try journal.record(Self.entry(Self.key))
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: -3700)], ofItemAtPath: journal.path(of: old))
        #expect(try journal.entry(for: Self.key) != nil)
        #expect(!FileManager.default.fileExists(atPath: journal.path(of: old)))
        #expect(try journal.entry(for: old) == nil)
        #expect(FileUploadJournal(directory: directory).maximumAge == 7 * 24 * 3600)
    }

    @Test func aDirectoryThatCannotBeMadeIsUnavailable() throws {
        let directory = try TempFiles.makeDirectory(prefix: "journal")
        defer { TempFiles.remove(directory) }
        try Data("x".utf8).write(to: URL(fileURLWithPath: directory + "/file"))
        let journal = FileUploadJournal(directory: directory + "/file/blobstream/uploads")
        for attempt in [{ _ = try journal.entry(for: Self.key) }, { try journal.record(Self.entry(Self.key)) }] {
            #expect {
                try attempt()
            } throws: { error in
                guard case .unavailable(let path, "mkdir", ENOTDIR) = error as? UploadJournalError else { return false }
                return path == directory + "/file/blobstream"
            }
        }
    }

    @Test func theDefaultDirectoryFollowsXDG() {
        #expect(FileUploadJournal.defaultDirectory(environment: ["XDG_STATE_HOME": "/s", "HOME": "/h"]) == "/s/blobstream/uploads")
        #expect(FileUploadJournal.defaultDirectory(environment: ["XDG_STATE_HOME": "relative", "HOME": "/h"]) == "/h/.local/state/blobstream/uploads")
        #expect(FileUploadJournal.defaultDirectory(environment: ["HOME": "/h"]) == "/h/.local/state/blobstream/uploads")
        #expect(FileUploadJournal.defaultDirectory(environment: [:]) == nil)
    }

    @Test func keysOfPathsAreAbsolute() {
        let relative = UploadJournalKey(sourceName: "a/../b.bin", destination: "d")
        #expect(relative.source == FileManager.default.currentDirectoryPath + "/b.bin")
        #expect(UploadJournalKey(sourceName: "https://h/x?y", destination: "d").source == "https://h/x?y")
        #expect(relative.digest != UploadJournalKey(sourceName: "b.bin", destination: "e").digest)
        // A file's name with a colon is a path, made absolute, not a URL of scheme "a".
        #expect(UploadJournalKey(sourceName: "a:b.bin", isPath: true, destination: "d").source
                == FileManager.default.currentDirectoryPath + "/a:b.bin")
    }
}
