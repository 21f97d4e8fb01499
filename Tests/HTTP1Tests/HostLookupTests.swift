import Foundation
@testable import HTTP1
import SystemCalls
import Testing

/// A host lookup that the resolver holds up can be given up at once, and frees what it
/// finds when it ends later; an address needs no resolver.
@Suite struct HostLookupTests {
    @Test func anAddressIsLookedUpAtOnceWithoutTheResolver() throws {
        let lookup = try #require(HostLookup(host: "127.0.0.1", port: 80))
        guard case .success(let addresses)? = lookup.take() else {
            Issue.record("no addresses for 127.0.0.1")
            return
        }
        freeaddrinfo(addresses.list)
    }

    @Test func aLookupThatHangsCanBeAbandonedAndFreesItsResultLater() throws {
        let release = DispatchSemaphore(value: 0)
        let freed = LockedValue(0)
        let made = HostLookup(host: "slow.example", port: 80, resolve: { _, service, numericOnly in
            if numericOnly { return .failure(HostLookup.LookupError(status: EAI_NONAME)) }
            release.wait()
            return HostLookup.getAddresses(host: "127.0.0.1", service: service, numericOnly: true)
        }, release: { addresses in
            freeaddrinfo(addresses.list)
            freed.withLock { $0 += 1 }
        })
        let lookup = try #require(made)
        #expect(lookup.take() == nil, "still under way")
        lookup.abandon()
        #expect(freed.withLock { $0 } == 0, "nothing to free yet")
        release.signal()
        // The thread ends on its own and frees what it found, once; nothing is handed out.
        let deadline = Date().addingTimeInterval(10)
        while freed.withLock({ $0 }) == 0 && Date() < deadline { usleep(1000) }
        #expect(freed.withLock { $0 } == 1)
        #expect(lookup.take() == nil)
    }

    @Test func aFinishedLookupThatNobodyTookIsFreedWhenAbandoned() throws {
        let freed = LockedValue(0)
        let made = HostLookup(host: "127.0.0.1", port: 80, release: { addresses in
            freeaddrinfo(addresses.list)
            freed.withLock { $0 += 1 }
        })
        let lookup = try #require(made)
        lookup.abandon()
        lookup.abandon()
        #expect(freed.withLock { $0 } == 1)
        #expect(lookup.take() == nil)
    }

    @Test func aConnectionToAHostThatDoesNotResolveSaysSo() {
        #expect {
            try HTTP1Connection().connect(host: "no-such-host.invalid", port: 80, wait: .after(5))
        } throws: { error in
            switch error as? HTTP1Error {
            case .network(let reason, .unresolved)?: reason.contains("no-such-host.invalid")
            case .timedOut?: true
            default: false
            }
        }
    }

    /// `localhost.` (`localhost` fully qualified) and names under `.localhost` are the loopback
    /// (RFC 6761); `localhost` itself is looked up, in /etc/hosts; nothing else is rewritten (a name that merely contains "localhost" is looked up as it is).
    @Test func namesUnderLocalhostAreTheLoopback() {
        #expect(HostLookup.loopbackName(for: "bucket.s3.localhost") == "localhost")
        #expect(HostLookup.loopbackName(for: "A.LOCALHOST.") == "localhost")
        #expect(HostLookup.loopbackName(for: "localhost.") == "localhost")
        #expect(HostLookup.loopbackName(for: "localhost") == nil)
        #expect(HostLookup.loopbackName(for: "localhost.example.com") == nil)
        #expect(HostLookup.loopbackName(for: "evil-localhost") == nil)
    }
}
