import BlobStream
import BlobTestSupport
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing

/// Consumers of `InputStream` other than URLSession, reading a BlobInputStream.
@Suite struct StreamConsumerTests {
    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous], [false, true])
    func aChecksumOfASourceThatChangedBeforeItsEndThrows(mode: BlobInputStream.Mode, hidesLength: Bool) {
        let source = ProbeDataSource(bytes: StreamReadingTests.pattern(3_000_000), hidesLength: hidesLength)
        let changed = BlobStreamError.sourceChanged(resource: "probe", offset: 3_000_000, reason: "rewritten in place")
        source.answerConfirm(with: changed)
        let stream = BlobInputStream(dataSource: source, mode: mode)
        #expect(throws: changed) {
            try ChecksumCalculator(algorithm: .sha256, bufferSize: 100_000).digest(of: stream)
        }
        #expect(source.confirmCount == 1)
    }
}

/// Foundation's own consumers of `InputStream`.
@Suite struct FoundationConsumerTests {
    static func stream(_ text: String, blockSize: Int = 7) -> BlobInputStream {
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Data(text.utf8)))
        stream.blockSize = blockSize
        return stream
    }

    @Test func jsonSerializationReadsABlobInputStream() throws {
        let stream = Self.stream(#"{"name": "blob", "sizes": [1, 22, 333], "nested": {"ok": true}}"#)
        stream.open()
        let object = try JSONSerialization.jsonObject(with: stream) as? [String: Any]
        #expect(object?["name"] as? String == "blob")
        #expect(object?["sizes"] as? [Int] == [1, 22, 333])
        #expect((object?["nested"] as? [String: Any])?["ok"] as? Bool == true)
        #expect(stream.streamStatus == .atEnd)
    }

    @Test func xmlParserReadsABlobInputStream() {
        final class Collector: NSObject, XMLParserDelegate {
            var elements: [String] = []
            var text = ""
            func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                        qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]) {
                elements.append(elementName)
            }
            func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }
        }
        let body = "<blob><part>first</part><part>second</part>" + String(repeating: "<x/>", count: 5000) + "</blob>"
        let parser = XMLParser(stream: Self.stream(body, blockSize: 4096))
        let collector = Collector()
        parser.delegate = collector
        #expect(parser.parse())
        #expect(collector.elements.prefix(3) == ["blob", "part", "part"])
        #expect(collector.elements.count == 5003)
        #expect(collector.text == "firstsecond")
    }

    /// Linux Foundation's `PropertyListSerialization.propertyList(with:options:format:)` does not
    /// call the stream's `read`: it hands the `CFReadStream` that every `InputStream` creates in
    /// its initialiser (for a subclass, one over empty data that is never opened) to
    /// `CFPropertyListCreateWithStream`, and when that returns no property list it force-unwraps
    /// the result and traps, even for a plain `InputStream(data:)` of malformed bytes. No
    /// override can reach that private stream, so the child process (`property-list-probe`, which
    /// does just that) dies of a trap. When Foundation changes, this test
    /// fails: then update the README's exception and this pin.
    @Test func propertyListSerializationOfABlobInputStreamTrapsInLinuxFoundation() async throws {
        let child = try await ToolProcess.execute(
            ToolProcess.builtExecutable("property-list-probe"), [], environment: ["SWIFT_BACKTRACE": "enable=no"])
        #expect(child.signal == SIGILL || child.signal == SIGTRAP, """
            PropertyListSerialization no longer traps on a BlobInputStream (status \(child.status), signal \
            \(String(describing: child.signal))): update the README and this test.
            \(child.standardOutput.suffix(2000))
            """)
        #expect(!child.standardOutput.contains("PROPERTY-LIST-READ"))
    }
}
