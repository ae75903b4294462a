import Testing

@testable import CourierTransport

/// The pool's bookkeeping: connects up to the limit, the FIFO queue, HTTP/1 reuse, closes, failures and counts.
@Suite("PoolStateMachine")
struct PoolStateMachineTests {
    typealias Machine = PoolStateMachine<String, Int, String>

    @Test func opensUpToTheLimitThenQueues() {
        var machine = Machine(maxConnectionsPerHost: 2)
        #expect(machine.lease("a", for: "r1") == .connect)
        #expect(machine.lease("a", for: "r2") == .connect)
        #expect(machine.lease("a", for: "r3") == .wait)
        #expect(machine.lease("b", for: "r4") == .connect)
        #expect(machine.counts("a") == (0, 2, 1))
    }

    @Test func totalsAddUpEveryKey() {
        var machine = Machine(maxConnectionsPerHost: 1)
        _ = machine.lease("a", for: "r1")
        _ = machine.lease("a", for: "r2")
        _ = machine.lease("b", for: "r3")
        _ = machine.connected("a", 10, protocol: .http1, capacity: 1, for: "r1")
        #expect(machine.totals() == Machine.Counts(connecting: 1, idle: 0, busy: 1, inFlight: 1, waiting: 1))
        _ = machine.release("a", 10)  // to r2
        _ = machine.release("a", 10)
        #expect(machine.totals() == Machine.Counts(connecting: 1, idle: 1, busy: 0, inFlight: 0, waiting: 0))
    }

    @Test func releaseHandsTheConnectionToTheFirstWaiter() {
        var machine = Machine(maxConnectionsPerHost: 1)
        _ = machine.lease("a", for: "r1")
        _ = machine.lease("a", for: "r2")
        _ = machine.lease("a", for: "r3")
        _ = machine.connected("a", 10, protocol: .http1, capacity: 1, for: "r1")
        #expect(machine.release("a", 10) == .hand(10, to: "r2"))
        #expect(machine.release("a", 10) == .hand(10, to: "r3"))
        #expect(machine.release("a", 10) == .none)
        #expect(machine.counts("a") == (1, 0, 0))
        #expect(machine.lease("a", for: "r4") == .use(10))
    }

    @Test func aClosedConnectionMakesRoomForAWaiter() {
        var machine = Machine(maxConnectionsPerHost: 1)
        _ = machine.lease("a", for: "r1")
        _ = machine.lease("a", for: "r2")
        _ = machine.connected("a", 10, protocol: .http1, capacity: 1, for: "r1")
        #expect(machine.closed("a", 10) == .connect(for: "r2"))
        #expect(machine.counts("a") == (0, 1, 0))
    }

    @Test func aFailedConnectAlsoMakesRoom() {
        var machine = Machine(maxConnectionsPerHost: 1)
        _ = machine.lease("a", for: "r1")
        _ = machine.lease("a", for: "r2")
        #expect(machine.closed("a", nil) == .connect(for: "r2"))
    }

    @Test func idleConnectionsThatCloseAreForgotten() {
        var machine = Machine(maxConnectionsPerHost: 1)
        _ = machine.lease("a", for: "r1")
        _ = machine.connected("a", 10, protocol: .http1, capacity: 1, for: "r1")
        _ = machine.release("a", 10)
        #expect(machine.closed("a", 10) == .none)
        #expect(machine.counts("a") == (0, 0, 0))
        #expect(machine.lease("a", for: "r2") == .connect)
    }

    @Test func cancelledWaitersLeaveTheQueue() {
        var machine = Machine(maxConnectionsPerHost: 1)
        _ = machine.lease("a", for: "r1")
        _ = machine.lease("a", for: "r2")
        _ = machine.connected("a", 10, protocol: .http1, capacity: 1, for: "r1")
        let first = machine.cancelWaiter("a", "r2")
        let second = machine.cancelWaiter("a", "r2")
        #expect(first)
        #expect(!second)
        #expect(machine.release("a", 10) == .none)
    }

    @Test func shutdownReturnsIdleConnectionsAndWaitersAndRefusesNewLeases() {
        var machine = Machine(maxConnectionsPerHost: 1)
        _ = machine.lease("a", for: "r1")
        _ = machine.connected("a", 10, protocol: .http1, capacity: 1, for: "r1")
        _ = machine.release("a", 10)
        _ = machine.lease("b", for: "r2")
        _ = machine.connected("b", 11, protocol: .http1, capacity: 1, for: "r2")
        _ = machine.lease("b", for: "r3")
        let (idle, waiters) = machine.shutdown()
        #expect(idle == [10])
        #expect(waiters == ["r3"])
        #expect(machine.lease("a", for: "r4") == .failShutdown)
        #expect(machine.release("b", 11) == .close(11))
    }

    @Test func takingIdleConnectionsLeavesBusyOnesAndThePoolOpen() {
        var machine = Machine(maxConnectionsPerHost: 2)
        _ = machine.lease("a", for: "r1")
        _ = machine.lease("a", for: "r2")
        _ = machine.connected("a", 10, protocol: .http1, capacity: 1, for: "r1")
        _ = machine.connected("a", 11, protocol: .http1, capacity: 1, for: "r2")
        _ = machine.release("a", 10)
        #expect(machine.takeIdleConnections() == [10])
        #expect(machine.counts("a") == (idle: 0, busy: 1, waiting: 0))
        // The taken connection's close is not the pool's any more, and a new request opens a new connection.
        #expect(machine.closed("a", 10) == .none)
        #expect(machine.lease("a", for: "r3") == .connect)
        // The pool is not shut down: a connection opened after the reset is kept for reuse.
        _ = machine.connected("a", 12, protocol: .http1, capacity: 1, for: "r3")
        #expect(machine.release("a", 12) == .none)
        #expect(machine.lease("a", for: "r4") == .use(12))
    }

    /// `URLSession.reset` and `flush` promise that later requests run on new connections: a connection busy at the
    /// time finishes its exchange, then closes instead of waiting idle for the next request (or being handed to a
    /// waiter).
    @Test func aConnectionBusyWhenIdleOnesAreTakenClosesWhenItsExchangeEnds() {
        var machine = Machine(maxConnectionsPerHost: 1)
        _ = machine.lease("a", for: "r1")
        _ = machine.connected("a", 10, protocol: .http1, capacity: 1, for: "r1")
        #expect(machine.takeIdleConnections().isEmpty)
        #expect(machine.lease("a", for: "r2") == .wait)
        #expect(machine.release("a", 10) == .close(10))
        #expect(machine.counts("a") == (idle: 0, busy: 1, waiting: 1))
        // Its close frees the slot: the waiter gets a connection of its own.
        #expect(machine.closed("a", 10) == .connect(for: "r2"))
    }

    /// A `reset` or `flush` while a connection is still being opened: it runs the request it was opened for (made
    /// before the reset), then closes instead of waiting idle or serving a waiter, so that every later request starts
    /// on a new connection ("future requests occur on a new socket"). One opened after the reset is reused as usual.
    @Test func aConnectionStillOpeningAtAResetRunsItsRequestThenCloses() {
        var machine = Machine(maxConnectionsPerHost: 1)
        #expect(machine.lease("a", for: "r1") == .connect)
        let before = machine.generation
        #expect(machine.takeIdleConnections().isEmpty)
        #expect(machine.lease("a", for: "r2") == .wait)
        let assignments = machine.connected("a", 10, protocol: .http1, capacity: 1, for: "r1", generation: before)
        #expect(assignments.map(\.waiter) == ["r1"])
        #expect(machine.release("a", 10) == .close(10))
        #expect(machine.counts("a") == (idle: 0, busy: 1, waiting: 1))
        #expect(machine.closed("a", 10) == .connect(for: "r2"))
        let current = machine.generation
        _ = machine.connected("a", 11, protocol: .http1, capacity: 1, for: "r2", generation: current)
        #expect(machine.release("a", 11) == .none)
        #expect(machine.lease("a", for: "r3") == .use(11))
    }

    @Test func idleHTTP1ConnectionsAreReusedMostRecentFirst() {
        var machine = Machine(maxConnectionsPerHost: 2)
        _ = machine.lease("a", for: "r1")
        _ = machine.lease("a", for: "r2")
        _ = machine.connected("a", 10, protocol: .http1, capacity: 1, for: "r1")
        _ = machine.connected("a", 11, protocol: .http1, capacity: 1, for: "r2")
        _ = machine.release("a", 10)
        _ = machine.release("a", 11)
        #expect(machine.lease("a", for: "r3") == .use(11))
        #expect(machine.lease("a", for: "r4") == .use(10))
        #expect(machine.lease("a", for: "r5") == .wait)
    }

    @Test func anHTTP1ConnectionRunsOnlyItsTriggerWhateverItsCapacity() {
        var machine = Machine(maxConnectionsPerHost: 1)
        _ = machine.lease("a", for: "r1")
        _ = machine.lease("a", for: "r2")
        let assignments = machine.connected("a", 10, protocol: "http/1.1", capacity: 5, for: "r1")
        #expect(assignments == [.init(connection: 10, waiter: "r1")])
        #expect(machine.detailedCounts("a") == .init(busy: 1, inFlight: 1, waiting: 1))
        #expect(machine.release("a", 10) == .hand(10, to: "r2"))
    }

    @Test func aConnectFailureHandsTheNextWaiterANewConnectBelowTheLimit() {
        var machine = Machine(maxConnectionsPerHost: 2)
        _ = machine.lease("a", for: "r1")
        _ = machine.lease("a", for: "r2")
        _ = machine.lease("a", for: "r3")
        #expect(machine.closed("a", nil) == .connect(for: "r3"))
        #expect(machine.detailedCounts("a") == .init(connecting: 2))
        // Nobody waits any more: the second failure only frees its slot.
        #expect(machine.closed("a", nil) == .none)
        #expect(machine.detailedCounts("a") == .init(connecting: 1))
    }

    @Test func theCloseOfAConnectionThePoolDoesNotKnowFreesNoSlot() {
        var machine = Machine(maxConnectionsPerHost: 1)
        _ = machine.lease("a", for: "r1")
        _ = machine.lease("a", for: "r2")
        #expect(machine.closed("a", 99) == .none)
        #expect(machine.release("a", 99) == .none)
        #expect(machine.detailedCounts("a") == .init(connecting: 1, waiting: 1))
    }

    @Test func countsTellConnectionsByStateAndTheExchangesOnThem() {
        var machine = Machine(maxConnectionsPerHost: 4)
        for waiter in ["r1", "r2", "r3", "r4"] { _ = machine.lease("a", for: waiter) }
        _ = machine.connected("a", 10, protocol: .http1, capacity: 1, for: "r2")
        _ = machine.connected("a", 11, protocol: .http1, capacity: 1, for: "r3")
        _ = machine.release("a", 11)
        _ = machine.connected("a", 12, protocol: "h2", capacity: 5, for: "r4")
        #expect(machine.lease("a", for: "r5") == .use(12))
        #expect(machine.detailedCounts("a") == .init(connecting: 1, idle: 1, busy: 2, inFlight: 3, waiting: 0))
        #expect(machine.counts("a") == (1, 3, 0))
        #expect(machine.detailedCounts("b") == .init())
    }
}

@Suite("PoolStateMachine accounting")
struct PoolAccountingTests {
    @Test func everyCloseOfALeasedConnectionFreesItsSlot() {
        var machine = PoolStateMachine<String, Int, String>(maxConnectionsPerHost: 1)
        for round in 0..<10 {
            #expect(machine.lease("a", for: "r\(round)") == .connect)
            _ = machine.connected("a", round, protocol: .http1, capacity: 1, for: "r\(round)")
            // Failed, cancelled or `Connection: close`: the connection closes while leased.
            #expect(machine.closed("a", round) == .none)
        }
        #expect(machine.counts("a") == (0, 0, 0))
    }

    @Test func releaseDuringShutdownIsSettledByTheClose() {
        var machine = PoolStateMachine<String, Int, String>(maxConnectionsPerHost: 2)
        _ = machine.lease("a", for: "r1")
        _ = machine.connected("a", 10, protocol: .http1, capacity: 1, for: "r1")
        _ = machine.shutdown()
        #expect(machine.release("a", 10) == .close(10))
        #expect(machine.counts("a") == (0, 1, 0))
        _ = machine.closed("a", 10)
        #expect(machine.counts("a") == (0, 0, 0))
    }
}

extension PoolStateMachineTests {
    /// Connections whose protocol is only known once they opened, multiplexed ones (a fake "h2" with several
    /// streams per connection), and detached connections.
    @Suite("PoolStateMachine per protocol")
    struct PerProtocol {
        @Test func waitersQueueOnAConnectionWhoseProtocolIsNotKnownYet() {
            var machine = Machine(maxConnectionsPerHost: 1)
            #expect(machine.lease("a", for: "r1") == .connect)
            #expect(machine.lease("a", for: "r2") == .wait)
            #expect(machine.lease("a", for: "r3") == .wait)
            #expect(machine.detailedCounts("a") == .init(connecting: 1, waiting: 2))
            let assignments = machine.connected("a", 10, protocol: "h2", capacity: 3, for: "r1")
            #expect(assignments.map(\.waiter) == ["r1", "r2", "r3"])
            #expect(assignments.allSatisfy { $0.connection == 10 })
            #expect(machine.detailedCounts("a") == .init(busy: 1, inFlight: 3))
        }

        @Test func aMultiplexedConnectionServesWaitersOnlyUpToItsCapacity() {
            var machine = Machine(maxConnectionsPerHost: 1)
            for waiter in ["r1", "r2", "r3", "r4", "r5"] { _ = machine.lease("a", for: waiter) }
            let assignments = machine.connected("a", 10, protocol: "h2", capacity: 2, for: "r1")
            #expect(assignments == [.init(connection: 10, waiter: "r1"), .init(connection: 10, waiter: "r2")])
            #expect(machine.detailedCounts("a") == .init(busy: 1, inFlight: 2, waiting: 3))
        }

        @Test func freeStreamsServeNewLeasesBeforeAnyNewConnection() {
            var machine = Machine(maxConnectionsPerHost: 2)
            _ = machine.lease("a", for: "r1")
            _ = machine.connected("a", 10, protocol: "h2", capacity: 3, for: "r1")
            #expect(machine.lease("a", for: "r2") == .use(10))
            #expect(machine.lease("a", for: "r3") == .use(10))
            // Full: a second connection, below the limit.
            #expect(machine.lease("a", for: "r4") == .connect)
            #expect(machine.detailedCounts("a") == .init(connecting: 1, busy: 1, inFlight: 3))
        }

        @Test func theConnectionWithTheMostFreeStreamsIsLeasedFirstTheOldestOnATie() {
            var machine = Machine(maxConnectionsPerHost: 2)
            _ = machine.lease("a", for: "r1")
            _ = machine.lease("a", for: "r2")
            _ = machine.connected("a", 10, protocol: "h2", capacity: 2, for: "r1")
            _ = machine.connected("a", 11, protocol: "h2", capacity: 4, for: "r2")
            let leases = ["r3", "r4", "r5", "r6", "r7"].map { machine.lease("a", for: $0) }
            #expect(leases == [.use(11), .use(11), .use(10), .use(11), .wait])
        }

        @Test func aReleasedStreamGoesToTheFirstWaiterElseFreesUp() {
            var machine = Machine(maxConnectionsPerHost: 1)
            _ = machine.lease("a", for: "r1")
            _ = machine.connected("a", 10, protocol: "h2", capacity: 2, for: "r1")
            _ = machine.lease("a", for: "r2")
            #expect(machine.lease("a", for: "r3") == .wait)
            #expect(machine.release("a", 10) == .hand(10, to: "r3"))
            #expect(machine.detailedCounts("a") == .init(busy: 1, inFlight: 2))
            #expect(machine.release("a", 10) == .none)
            #expect(machine.detailedCounts("a") == .init(busy: 1, inFlight: 1))
            #expect(machine.release("a", 10) == .none)
            #expect(machine.detailedCounts("a") == .init(idle: 1))
            #expect(machine.lease("a", for: "r4") == .use(10))
        }

        @Test func aMultiplexedCapacityBelowOneCountsAsOne() {
            var machine = Machine(maxConnectionsPerHost: 1)
            _ = machine.lease("a", for: "r1")
            #expect(machine.connected("a", 10, protocol: "h2", capacity: 0, for: "r1").count == 1)
            _ = machine.release("a", 10)
            #expect(machine.lease("a", for: "r2") == .use(10))
        }

        @Test func aCancelledWaiterIsNotServedWhenTheConnectionOpens() {
            var machine = Machine(maxConnectionsPerHost: 1)
            for waiter in ["r1", "r2", "r3"] { _ = machine.lease("a", for: waiter) }
            let cancelled = machine.cancelWaiter("a", "r2")
            // The request a connection is being opened for does not wait in the queue.
            let trigger = machine.cancelWaiter("a", "r1")
            #expect(cancelled)
            #expect(!trigger)
            let assignments = machine.connected("a", 10, protocol: "h2", capacity: 3, for: "r1")
            #expect(assignments.map(\.waiter) == ["r1", "r3"])
        }

        @Test func detachFreesTheSlotAndTheFirstWaiterGetsAConnect() {
            var machine = Machine(maxConnectionsPerHost: 1)
            _ = machine.lease("a", for: "r1")
            _ = machine.connected("a", 10, protocol: .http1, capacity: 1, for: "r1")
            _ = machine.lease("a", for: "r2")
            #expect(machine.detach("a", 10) == .connect(for: "r2"))
            #expect(machine.detailedCounts("a") == .init(connecting: 1))
        }

        @Test func aDetachedConnectionIsNeverLeasedAgainAndItsCloseIsIgnored() {
            var machine = Machine(maxConnectionsPerHost: 1)
            _ = machine.lease("a", for: "r1")
            _ = machine.connected("a", 10, protocol: .http1, capacity: 1, for: "r1")
            #expect(machine.detach("a", 10) == .none)
            #expect(machine.release("a", 10) == .none)
            #expect(machine.lease("a", for: "r2") == .connect)
            #expect(machine.lease("a", for: "r3") == .wait)
            // Not the pool's any more: its close frees nothing and starts no connect for r3.
            #expect(machine.closed("a", 10) == .none)
            #expect(machine.detach("a", 10) == .none)
            #expect(machine.detailedCounts("a") == .init(connecting: 1, waiting: 1))
        }

        @Test func detachingAMultiplexedConnectionDropsItsStreamsFromTheCount() {
            var machine = Machine(maxConnectionsPerHost: 1)
            _ = machine.lease("a", for: "r1")
            _ = machine.connected("a", 10, protocol: "h2", capacity: 2, for: "r1")
            _ = machine.lease("a", for: "r2")
            _ = machine.lease("a", for: "r3")
            #expect(machine.detach("a", 10) == .connect(for: "r3"))
            #expect(machine.release("a", 10) == .none)
            #expect(machine.detailedCounts("a") == .init(connecting: 1))
        }

        @Test func shutdownClosesIdleConnectionsAndLetsConnectingAndBusyOnesFinish() {
            var machine = Machine(maxConnectionsPerHost: 4)
            for waiter in ["r1", "r2", "r3", "r4"] { _ = machine.lease("a", for: waiter) }
            _ = machine.connected("a", 10, protocol: .http1, capacity: 1, for: "r2")
            _ = machine.connected("a", 11, protocol: "h2", capacity: 2, for: "r3")
            _ = machine.release("a", 11)
            _ = machine.connected("a", 12, protocol: .http1, capacity: 1, for: "r4")
            _ = machine.detach("a", 12)
            let (idle, waiters) = machine.shutdown()
            #expect(idle == [11])
            #expect(waiters.isEmpty)
            #expect(machine.lease("a", for: "r5") == .failShutdown)
            // The connection still being opened runs its request, then closes.
            #expect(machine.connected("a", 13, protocol: .http1, capacity: 1, for: "r1").map(\.waiter) == ["r1"])
            #expect(machine.release("a", 13) == .close(13))
            #expect(machine.release("a", 10) == .close(10))
            #expect(machine.closed("a", 12) == .none)
            #expect(machine.closed("a", 11) == .none)
            #expect(machine.detailedCounts("a") == .init(busy: 2, inFlight: 2))
            _ = machine.closed("a", 10)
            _ = machine.closed("a", 13)
            #expect(machine.detailedCounts("a") == .init())
        }

        @Test func aMultiplexedConnectionClosesAtShutdownWhenItsLastStreamEnds() {
            var machine = Machine(maxConnectionsPerHost: 1)
            _ = machine.lease("a", for: "r1")
            _ = machine.connected("a", 10, protocol: "h2", capacity: 3, for: "r1")
            _ = machine.lease("a", for: "r2")
            let (idle, _) = machine.shutdown()
            #expect(idle.isEmpty)
            #expect(machine.release("a", 10) == .none)
            #expect(machine.release("a", 10) == .close(10))
            #expect(machine.closed("a", 10) == .none)
            #expect(machine.detailedCounts("a") == .init())
        }

        /// After `reset`/`flush`, a multiplexed connection that still runs streams takes no new one (even with free
        /// streams, even when its peer raises its limit) and closes when its last stream ends.
        @Test func aBusyMultiplexedConnectionTakesNoNewStreamAfterIdleOnesAreTaken() {
            var machine = Machine(maxConnectionsPerHost: 2)
            _ = machine.lease("a", for: "r1")
            _ = machine.connected("a", 10, protocol: "h2", capacity: 100, for: "r1")
            #expect(machine.takeIdleConnections().isEmpty)
            #expect(machine.lease("a", for: "r2") == .connect)
            #expect(machine.capacityChanged("a", 10, capacity: 200).isEmpty)
            #expect(machine.lease("a", for: "r3") == .wait)
            #expect(machine.release("a", 10) == .close(10))
            #expect(machine.closed("a", 10) == .none)
            // The waiter gets a stream of the new connection.
            let assignments = machine.connected("a", 11, protocol: "h2", capacity: 100, for: "r2")
            #expect(assignments.map(\.waiter) == ["r2", "r3"])
        }

        /// A multiplexed connection still being opened at a `reset`/`flush` runs only the stream it was opened for:
        /// it takes no waiter and no new lease, whatever its capacity, and closes when that stream ends.
        @Test func aMultiplexedConnectionStillOpeningAtAResetRunsOnlyItsTrigger() {
            var machine = Machine(maxConnectionsPerHost: 1)
            #expect(machine.lease("a", for: "r1", mayMultiplex: true) == .connect)
            let before = machine.generation
            #expect(machine.takeIdleConnections().isEmpty)
            #expect(machine.lease("a", for: "r2", mayMultiplex: true) == .wait)
            let assignments = machine.connected("a", 10, protocol: "h2", capacity: 100, for: "r1", generation: before)
            #expect(assignments.map(\.waiter) == ["r1"])
            #expect(machine.capacityChanged("a", 10, capacity: 200).isEmpty)
            #expect(machine.lease("a", for: "r3", mayMultiplex: true) == .wait)
            #expect(machine.release("a", 10) == .close(10))
            #expect(machine.closed("a", 10) == .connect(for: "r2"))
            let current = machine.generation
            let next = machine.connected("a", 11, protocol: "h2", capacity: 100, for: "r2", generation: current)
            #expect(next.map(\.waiter) == ["r2", "r3"])
        }

        @Test func closingAMultiplexedConnectionFreesItsSlotForAWaiter() {
            var machine = Machine(maxConnectionsPerHost: 1)
            _ = machine.lease("a", for: "r1")
            _ = machine.connected("a", 10, protocol: "h2", capacity: 1, for: "r1")
            _ = machine.lease("a", for: "r2")
            #expect(machine.closed("a", 10) == .connect(for: "r2"))
            #expect(machine.detailedCounts("a") == .init(connecting: 1))
        }

        @Test func onlyHTTP1NamesAreNotMultiplexed() {
            #expect(!ApplicationProtocol.http1.isMultiplexed)
            #expect(!ApplicationProtocol("http/1.0").isMultiplexed)
            #expect(ApplicationProtocol("h2").isMultiplexed)
            #expect(ApplicationProtocol("h3").isMultiplexed)
        }
        @Test func onceAKeyIsKnownToBeMultiplexedRequestsWaitForTheConnectionBeingOpened() {
            var machine = Machine(maxConnectionsPerHost: 6)
            _ = machine.lease("a", for: "r1")
            _ = machine.connected("a", 10, protocol: "h2", capacity: 1, for: "r1")
            // Full: one more connection, and while it opens nobody else opens one.
            #expect(machine.lease("a", for: "r2") == .connect)
            #expect(machine.lease("a", for: "r3") == .wait)
            #expect(machine.lease("a", for: "r4") == .wait)
            let assignments = machine.connected("a", 11, protocol: "h2", capacity: 5, for: "r2")
            #expect(assignments.map(\.waiter) == ["r2", "r3", "r4"])
            #expect(machine.connectForWaiters("a").isEmpty)
        }

        @Test func aKeyOfUnknownProtocolOpensConnectionsUpToTheLimitAsHTTP1Does() {
            var machine = Machine(maxConnectionsPerHost: 3)
            #expect(machine.lease("a", for: "r1") == .connect)
            #expect(machine.lease("a", for: "r2") == .connect)
            #expect(machine.lease("a", for: "r3") == .connect)
            #expect(machine.lease("a", for: "r4") == .wait)
        }

        @Test func aKeyThatMayBeMultiplexedOpensOneConnectionUntilItsProtocolIsKnown() {
            var machine = Machine(maxConnectionsPerHost: 6)
            #expect(machine.lease("a", for: "r1", mayMultiplex: true) == .connect)
            #expect(machine.lease("a", for: "r2", mayMultiplex: true) == .wait)
            #expect(machine.lease("a", for: "r3", mayMultiplex: true) == .wait)
            // It spoke h2: its streams serve the others.
            let assignments = machine.connected("a", 10, protocol: "h2", capacity: 100, for: "r1")
            #expect(assignments.map(\.waiter) == ["r1", "r2", "r3"])
            // Had it spoken HTTP/1.1, the waiters would have opened connections of their own.
            #expect(machine.lease("b", for: "s1", mayMultiplex: true) == .connect)
            #expect(machine.lease("b", for: "s2", mayMultiplex: true) == .wait)
            #expect(machine.lease("b", for: "s3", mayMultiplex: true) == .wait)
            _ = machine.connected("b", 20, protocol: .http1, capacity: 1, for: "s1")
            #expect(machine.connectForWaiters("b") == ["s2", "s3"])
        }

        @Test func waitersForAMultiplexedConnectionThatTurnedOutHTTP1GetConnectionsOfTheirOwn() {
            var machine = Machine(maxConnectionsPerHost: 3)
            _ = machine.lease("a", for: "r1")
            _ = machine.connected("a", 10, protocol: "h2", capacity: 1, for: "r1")
            _ = machine.lease("a", for: "r2")
            _ = machine.lease("a", for: "r3")
            _ = machine.lease("a", for: "r4")
            // The server now speaks HTTP/1.1 only (its configuration changed between the two connections).
            let assignments = machine.connected("a", 11, protocol: .http1, capacity: 1, for: "r2")
            #expect(assignments.map(\.waiter) == ["r2"])
            #expect(machine.connectForWaiters("a") == ["r3"])
            #expect(machine.detailedCounts("a") == .init(connecting: 1, busy: 2, inFlight: 2, waiting: 1))
        }

        @Test func aRaisedStreamLimitServesWaitersAtOnce() {
            var machine = Machine(maxConnectionsPerHost: 1)
            for waiter in ["r1", "r2", "r3", "r4"] { _ = machine.lease("a", for: waiter) }
            _ = machine.connected("a", 10, protocol: "h2", capacity: 1, for: "r1")
            let assignments = machine.capacityChanged("a", 10, capacity: 3)
            #expect(assignments.map(\.waiter) == ["r2", "r3"])
            #expect(machine.detailedCounts("a") == .init(busy: 1, inFlight: 3, waiting: 1))
            #expect(machine.capacityChanged("a", 99, capacity: 10).isEmpty)
        }

        @Test func aLoweredStreamLimitLetsRunningStreamsFinishBeforeHandingAny() {
            var machine = Machine(maxConnectionsPerHost: 1)
            _ = machine.lease("a", for: "r1")
            _ = machine.connected("a", 10, protocol: "h2", capacity: 3, for: "r1")
            _ = machine.lease("a", for: "r2")
            _ = machine.lease("a", for: "r3")
            #expect(machine.capacityChanged("a", 10, capacity: 1).isEmpty)
            #expect(machine.lease("a", for: "r4") == .wait)
            // Three run where one is allowed: the first two ends hand nothing; the third hands its stream.
            #expect(machine.release("a", 10) == .none)
            #expect(machine.release("a", 10) == .none)
            #expect(machine.release("a", 10) == .hand(10, to: "r4"))
        }

        @Test func aConnectionThatGoesAwayIsNeverLeasedAgainAndItsStreamsEndUnnoticed() {
            var machine = Machine(maxConnectionsPerHost: 1)
            _ = machine.lease("a", for: "r1")
            _ = machine.connected("a", 10, protocol: "h2", capacity: 2, for: "r1")
            _ = machine.lease("a", for: "r2")
            #expect(machine.lease("a", for: "r3") == .wait)
            // GOAWAY: retired like a detached connection; the waiter gets a new connection.
            #expect(machine.detach("a", 10) == .connect(for: "r3"))
            #expect(machine.release("a", 10) == .none)
            #expect(machine.closed("a", 10) == .none)
            #expect(machine.detailedCounts("a") == .init(connecting: 1))
        }
    }
}
