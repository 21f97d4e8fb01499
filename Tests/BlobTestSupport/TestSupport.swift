import BlobStream
