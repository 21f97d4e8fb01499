import Foundation
@testable import HTTP1
import Testing

/// The redirect rule, without a network: every client maps these decisions to its
/// own errors (the HTTP source, the upload clients and S3 are tested against servers elsewhere).
struct HTTPRedirectPolicyTests {
    let origin = URL(string: "https://files.example/a/b?x=1")!

    private func next(
        _ policy: HTTPRedirectPolicy, method: String = "GET", hasBody: Bool = false, status: Int = 302,
        _ location: String?, followed: Int = 0
    ) -> Result<HTTPRedirectPolicy.Follow, HTTPRedirectPolicy.Refusal>? {
        policy.next(method: method, url: origin, hasBody: hasBody, status: status, location: location, followed: followed)
    }

    @Test func anAnswerThatIsNoRedirectIsTheAnswer() {
        #expect(next(.download, status: 200, "/c") == nil)
        #expect(next(.download, status: 304, "/c") == nil)
        #expect(next(.download, status: 302, nil) == nil)
    }

    @Test func aRelativeLocationIsResolvedAgainstTheURLThatAnswered() {
        #expect(next(.upload, "c/") == .success(.init(url: URL(string: "https://files.example/a/c/")!, method: "GET")))
        #expect(next(.download, "//cdn.example/blob") == .success(.init(url: URL(string: "https://cdn.example/blob")!, method: "GET")))
    }

    @Test func seeOtherAsksWithGETButKeepsHEAD() {
        #expect(next(.upload, method: "POST", status: 303, "/done") == .success(.init(url: URL(string: "https://files.example/done")!, method: "GET")))
        #expect(next(.upload, method: "HEAD", status: 303, "/done") == .success(.init(url: URL(string: "https://files.example/done")!, method: "HEAD")))
        #expect(next(.upload, method: "POST", status: 307, "/again") == .success(.init(url: URL(string: "https://files.example/again")!, method: "POST")))
    }

    @Test func everyClientRefusesOtherSchemesDowngradesAndBodies() {
        for policy in [HTTPRedirectPolicy.download, .upload, .s3] {
            #expect(next(policy, "ftp://files.example/x") == .failure(.notHTTP(URL(string: "ftp://files.example/x")!)))
            #expect(next(policy, "http://files.example/a/b?x=1") == .failure(.downgrade(URL(string: "http://files.example/a/b?x=1")!)))
            #expect(next(policy, method: "PUT", hasBody: true, status: 307, "/a/b?x=1")
                == .failure(.body(URL(string: "https://files.example/a/b?x=1")!)))
        }
    }

    @Test func eachReachIsItsOwn() {
        let cdn = URL(string: "https://cdn.example/blob")!
        #expect(next(.download, cdn.absoluteString) == .success(.init(url: cdn, method: "GET")))
        #expect(next(.upload, cdn.absoluteString) == .failure(.otherOrigin(cdn, allowed: URLOrigin(origin))))
        #expect(next(.upload, "https://files.example:8443/a") == .failure(.otherOrigin(URL(string: "https://files.example:8443/a")!, allowed: URLOrigin(origin))))
        #expect(next(.s3, cdn.absoluteString) == .failure(.otherOrigin(cdn, allowed: URLOrigin(origin))))
        #expect(next(.s3, "/a/b?x=2") == .failure(.otherResource(URL(string: "https://files.example/a/b?x=2")!)))
        #expect(next(.s3, "/a/c?x=1") == .failure(.otherResource(URL(string: "https://files.example/a/c?x=1")!)))
        #expect(next(.s3, method: "PUT", status: 303, "/a/b?x=1") == .failure(.otherResource(URL(string: "https://files.example/a/b?x=1")!)))
        #expect(next(.s3, method: "PUT", status: 307, "https://FILES.example:443/a/b?x=1")
            == .success(.init(url: URL(string: "https://FILES.example:443/a/b?x=1")!, method: "PUT")))
    }

    @Test func theLimitCountsRedirectsInARow() {
        for policy in [HTTPRedirectPolicy.download, .upload, .s3] {
            #expect(next(policy, "/a/b?x=1", followed: policy.limit - 1) != nil)
            guard case .failure(.tooMany(_, let limit))? = next(policy, "/a/b?x=1", followed: policy.limit) else {
                Issue.record("redirect \(policy.limit + 1) was not refused")
                continue
            }
            #expect(limit == policy.limit)
        }
    }

    @Test func aRefusalNamesWhereItPointed() {
        let refusal = HTTPRedirectPolicy.Refusal.downgrade(URL(string: "http://files.example/x")!)
        #expect(refusal.location == "http://files.example/x")
        #expect(refusal.reason.contains("never leaves TLS"))
        #expect(HTTPRedirectPolicy.Refusal.invalidLocation("::").location == "::")
    }
}
