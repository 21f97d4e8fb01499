// BlobUpload: streamed PUT/POST and resumable tus 1.0 uploads of any BlobInputStream.
