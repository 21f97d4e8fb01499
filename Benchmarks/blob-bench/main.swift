import Foundation

print("blob-bench: no scenarios yet")
