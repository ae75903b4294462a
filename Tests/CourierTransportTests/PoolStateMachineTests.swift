import Testing

@testable import CourierTransport

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

    @Test func releaseHandsTheConnectionToTheFirstWaiter() {
        var machine = Machine(maxConnectionsPerHost: 1)
        _ = machine.lease("a", for: "r1")
        _ = machine.lease("a", for: "r2")
        _ = machine.lease("a", for: "r3")
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
        _ = machine.release("a", 10)
        #expect(machine.closed("a", 10) == .none)
        #expect(machine.counts("a") == (0, 0, 0))
        #expect(machine.lease("a", for: "r2") == .connect)
    }

    @Test func cancelledWaitersLeaveTheQueue() {
        var machine = Machine(maxConnectionsPerHost: 1)
        _ = machine.lease("a", for: "r1")
        _ = machine.lease("a", for: "r2")
        let first = machine.cancelWaiter("a", "r2")
        let second = machine.cancelWaiter("a", "r2")
        #expect(first)
        #expect(!second)
        #expect(machine.release("a", 10) == .none)
    }

    @Test func shutdownReturnsIdleConnectionsAndWaitersAndRefusesNewLeases() {
        var machine = Machine(maxConnectionsPerHost: 1)
        _ = machine.lease("a", for: "r1")
        _ = machine.release("a", 10)
        _ = machine.lease("b", for: "r2")
        _ = machine.lease("b", for: "r3")
        let (idle, waiters) = machine.shutdown()
        #expect(idle == [10])
        #expect(waiters == ["r3"])
        #expect(machine.lease("a", for: "r4") == .failShutdown)
        #expect(machine.release("b", 11) == .close(11))
    }
}

@Suite("PoolStateMachine accounting")
struct PoolAccountingTests {
    @Test func everyCloseOfALeasedConnectionFreesItsSlot() {
        var machine = PoolStateMachine<String, Int, String>(maxConnectionsPerHost: 1)
        for round in 0..<10 {
            #expect(machine.lease("a", for: "r\(round)") == .connect)
            // Failed, cancelled or `Connection: close`: the connection closes while leased.
            #expect(machine.closed("a", round) == .none)
        }
        #expect(machine.counts("a") == (0, 0, 0))
    }

    @Test func releaseDuringShutdownIsSettledByTheClose() {
        var machine = PoolStateMachine<String, Int, String>(maxConnectionsPerHost: 2)
        _ = machine.lease("a", for: "r1")
        _ = machine.shutdown()
        #expect(machine.release("a", 10) == .close(10))
        #expect(machine.counts("a") == (0, 1, 0))
        _ = machine.closed("a", 10)
        #expect(machine.counts("a") == (0, 0, 0))
    }
}
