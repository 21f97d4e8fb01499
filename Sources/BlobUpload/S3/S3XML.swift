import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// An element of an S3 XML answer: its local name (namespace dropped), its text, its children.
/// S3's answers are small (an error, a part list of at most 1,000 parts), so a tree is simplest.
struct S3XMLElement: Sendable {
    var name: String
    var text = ""
    var children: [S3XMLElement] = []

    /// The first child named `name`.
    func child(_ name: String) -> S3XMLElement? { children.first { $0.name == name } }
    /// Every child named `name`, in order.
    func all(_ name: String) -> [S3XMLElement] { children.filter { $0.name == name } }
    /// The trimmed text of the first child named `name`, or `nil`.
    func value(_ name: String) -> String? { child(name)?.text.trimmingCharacters(in: .whitespacesAndNewlines) }

    /// The root element of `data`, parsed with Foundation's `XMLParser`, or `nil` when it is
    /// not XML. External entities are never resolved. Whitespace before the document is
    /// dropped: S3 keeps a slow `CompleteMultipartUpload` alive with it, after the 200 (and
    /// some servers before the XML declaration, which the parser would refuse).
    static func parse(_ data: Data) -> S3XMLElement? {
        let start = data.firstIndex { ![0x20, 0x09, 0x0A, 0x0D].contains($0) } ?? data.endIndex
        guard start < data.endIndex else { return nil }
        let parser = XMLParser(data: data[start...])
        parser.shouldResolveExternalEntities = false
        parser.shouldProcessNamespaces = false
        let builder = TreeBuilder()
        parser.delegate = builder
        guard parser.parse() else { return nil }
        return builder.root
    }

    /// `text` with the five XML special characters escaped, for request bodies.
    static func escaped(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(character)
            }
        }
        return out
    }
}

private final class TreeBuilder: NSObject, XMLParserDelegate {
    var stack: [S3XMLElement] = []
    var root: S3XMLElement?

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]) {
        let local = elementName.split(separator: ":").last.map(String.init) ?? elementName
        stack.append(S3XMLElement(name: local))
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += string
    }

    // S3 may send text as CDATA: it is the same text.
    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += String(decoding: CDATABlock, as: UTF8.self)
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
        guard let done = stack.popLast() else { return }
        if stack.isEmpty {
            root = done
        } else {
            stack[stack.count - 1].children.append(done)
        }
    }
}

/// The parts of S3's multipart answers this client reads.
enum S3Answers {
    /// One part S3 has, as `ListParts` reports it.
    struct ListedPart: Sendable, Equatable {
        var number: Int
        var size: Int64
        var eTag: String
        /// The part's checksum of the upload's algorithm, base64, when the server lists it.
        var checksum: String?
    }

    /// Every part `ListParts` reports of an upload, and what it says of the upload's checksums.
    struct PartListing: Sendable {
        var parts: [ListedPart] = []
        /// `ChecksumAlgorithm` (`CRC32C`, …), when the server names it.
        var algorithm: String?
        /// `ChecksumType` (`COMPOSITE`, `FULL_OBJECT`), when the server names it.
        var checksumType: String?
    }

    /// The `<Error>` of an error answer: `Code`, `Message`, `RequestId`.
    static func error(_ body: Data) -> (code: String?, message: String?, requestID: String?)? {
        guard let root = S3XMLElement.parse(body), root.name == "Error" else { return nil }
        let message = root.value("Message").map { $0.split(whereSeparator: \.isNewline).joined(separator: " ") }
        return (root.value("Code"), message, root.value("RequestId"))
    }

    /// The body of `CompleteMultipartUpload`: every part's number, ETag and checksum, in order.
    static func completeBody(_ parts: [(number: Int, eTag: String, checksum: String?)], algorithm: S3ChecksumAlgorithm) -> Data {
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for part in parts {
            xml += "<Part><PartNumber>\(part.number)</PartNumber><ETag>\(S3XMLElement.escaped(part.eTag))</ETag>"
            if let checksum = part.checksum {
                xml += "<Checksum\(algorithm.s3Name)>\(S3XMLElement.escaped(checksum))</Checksum\(algorithm.s3Name)>"
            }
            xml += "</Part>"
        }
        xml += "</CompleteMultipartUpload>"
        return Data(xml.utf8)
    }
}
