// The child process of FoundationConsumerTests: reads a property list from a BlobInputStream
// with PropertyListSerialization, which traps inside Linux Foundation (see that test). A
// separate program, because a trap ends the process that runs it.
import BlobStream
import Foundation

let xml = try PropertyListSerialization.data(fromPropertyList: ["name": "blob"], format: .xml, options: 0)
let stream = BlobInputStream(dataSource: MemoryDataSource(data: xml))
stream.open()
let object = try PropertyListSerialization.propertyList(with: stream, options: [], format: nil)
print("PROPERTY-LIST-READ \(object)")
