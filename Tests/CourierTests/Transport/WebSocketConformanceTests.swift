import Courier
import CourierMockServer
import CourierTestSupport
import Foundation
import Testing

/// One case in the manner of the Autobahn test suite's client cases: what the server sends, frame by frame, and what
/// a conforming client does with it. `id` names the Autobahn case it reproduces.
struct WebSocketConformanceCase: Sendable, CustomTestStringConvertible {
    enum Outcome: Sendable {
        /// These messages arrive, then the server's normal close; `pongs` are the pongs the server gets back.
        case messages([Message], pongs: [[UInt8]] = [])
        /// The server's close frame ends the connection with this code (as `closeCode` reports it).
        case closed(code: Int)
        /// The client fails the connection with this close code (1002, 1007) and the task with
        /// `badServerResponse`.
        case failed(closeCode: Int)
    }

    enum Message: Sendable, Equatable {
        case text(String)
        case data(Data)
    }

    let id: String
    let frames: [[UInt8]]
    let outcome: Outcome

    var testDescription: String { id }

    typealias Op = MockWebSocketFrame.Opcode

    static func frame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, rsv: UInt8 = 0) -> [UInt8] {
        MockWebSocketFrame.bytes(opcode: opcode, fin: fin, rsv: rsv, payload: payload)
    }

    static func text(_ string: String) -> [UInt8] { frame(Op.text, Array(string.utf8)) }

    static func close(_ code: UInt16, _ reason: [UInt8] = []) -> [UInt8] {
        frame(Op.close, [UInt8(code >> 8), UInt8(code & 0xFF)] + reason)
    }

    /// `bytes` as a text message cut into one-byte fragments.
    static func fragmentedText(_ bytes: [UInt8]) -> [[UInt8]] {
        bytes.indices.map { index in
            frame(index == 0 ? Op.text : Op.continuation, [bytes[index]], fin: index == bytes.count - 1)
        }
    }
}

extension WebSocketConformanceCase {
    /// Section 1, framing: text and binary payloads at each length-encoding boundary.
    static let framing: [WebSocketConformanceCase] = [0, 125, 126, 127, 128, 65535, 65536].flatMap { length in
        [
            WebSocketConformanceCase(
                id: "1.1 text \(length)", frames: [text(String(repeating: "*", count: length))],
                outcome: .messages([.text(String(repeating: "*", count: length))])),
            WebSocketConformanceCase(
                id: "1.2 binary \(length)", frames: [frame(Op.binary, Array(repeating: 0xFE, count: length))],
                outcome: .messages([.data(Data(repeating: 0xFE, count: length))])),
        ]
    }

    /// Sections 2 to 5: pings, reserved bits, reserved opcodes and fragmentation.
    static let controlAndFragmentation: [WebSocketConformanceCase] =
        [
            WebSocketConformanceCase(
                id: "2.1 empty ping", frames: [frame(Op.ping, [])], outcome: .messages([], pongs: [[]])),
            WebSocketConformanceCase(
                id: "2.4 125-byte ping", frames: [frame(Op.ping, Array(repeating: 0xFE, count: 125))],
                outcome: .messages([], pongs: [Array(repeating: 0xFE, count: 125)])),
            WebSocketConformanceCase(
                id: "2.5 126-byte ping", frames: [frame(Op.ping, Array(repeating: 0xFE, count: 126))],
                outcome: .failed(closeCode: 1002)),
            WebSocketConformanceCase(
                id: "2.10 ten pings", frames: (0..<10).map { frame(Op.ping, [UInt8($0)]) },
                outcome: .messages([], pongs: (0..<10).map { [UInt8($0)] })),
            WebSocketConformanceCase(id: "2.x unsolicited pong", frames: [frame(Op.pong, [1])], outcome: .messages([])),
        ]
        + (1...7).flatMap { rsv in
            [
                WebSocketConformanceCase(
                    id: "3.\(rsv) RSV \(rsv) on text", frames: [frame(Op.text, Array("x".utf8), rsv: UInt8(rsv))],
                    outcome: .failed(closeCode: 1002)),
                WebSocketConformanceCase(
                    id: "3.\(rsv) RSV \(rsv) on ping", frames: [frame(Op.ping, [], rsv: UInt8(rsv))],
                    outcome: .failed(closeCode: 1002)),
            ]
        }
        + [3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF].map { opcode in
            WebSocketConformanceCase(
                id: "4.x reserved opcode \(opcode)", frames: [text("before"), frame(UInt8(opcode), [])],
                outcome: .failed(closeCode: 1002))
        }
        + [
            WebSocketConformanceCase(
                id: "5.1 fragmented ping", frames: [frame(Op.ping, [1], fin: false), frame(Op.continuation, [2])],
                outcome: .failed(closeCode: 1002)),
            WebSocketConformanceCase(
                id: "5.3 text in two fragments",
                frames: [frame(Op.text, Array("frag".utf8), fin: false), frame(Op.continuation, Array("ment".utf8))],
                outcome: .messages([.text("fragment")])),
            WebSocketConformanceCase(
                id: "5.6 ping between fragments",
                frames: [
                    frame(Op.text, Array("frag".utf8), fin: false), frame(Op.ping, [7]),
                    frame(Op.continuation, Array("ment".utf8)),
                ],
                outcome: .messages([.text("fragment")], pongs: [[7]])),
            WebSocketConformanceCase(
                id: "5.9 continuation without a message", frames: [frame(Op.continuation, Array("x".utf8))],
                outcome: .failed(closeCode: 1002)),
            WebSocketConformanceCase(
                id: "5.15 new message inside a fragmented one",
                frames: [frame(Op.text, Array("a".utf8), fin: false), text("b")],
                outcome: .failed(closeCode: 1002)),
            WebSocketConformanceCase(
                id: "5.19 binary in one-byte fragments",
                frames: (0..<64).map { index in
                    frame(index == 0 ? Op.binary : Op.continuation, [UInt8(index)], fin: index == 63)
                },
                outcome: .messages([.data(Data((0..<64).map { UInt8($0) }))])),
        ]

    /// Section 6, UTF-8: valid text whole and in one-byte fragments (a character split across frames is allowed);
    /// invalid sequences whole and fragmented end the connection with 1007.
    static let utf8: [WebSocketConformanceCase] = {
        let valid = ["κόσμε", "\u{7F}\u{80}\u{7FF}\u{800}\u{FFFF}\u{10000}\u{10FFFF}", "\u{FEFF}bom", "\u{0}nul"]
        let invalid: [(String, [UInt8])] = [
            ("lone continuation byte", [0x80]),
            ("overlong slash", [0xC0, 0xAF]),
            ("overlong three-byte", [0xE0, 0x80, 0xAF]),
            ("surrogate", [0xED, 0xA0, 0x80]),
            ("beyond U+10FFFF", [0xF4, 0x90, 0x80, 0x80]),
            ("0xFE", [0xFE]),
            ("0xFF", [0xFF]),
            ("truncated at the end", Array("κόσμε".utf8) + [0xCE]),
            ("valid then invalid", Array("κόσμε".utf8) + [0xED, 0xA0, 0x80] + Array("edited".utf8)),
        ]
        var cases: [WebSocketConformanceCase] = []
        for (index, string) in valid.enumerated() {
            cases.append(
                WebSocketConformanceCase(
                    id: "6.\(index) valid", frames: [text(string)], outcome: .messages([.text(string)])))
            cases.append(
                WebSocketConformanceCase(
                    id: "6.\(index) valid in one-byte fragments", frames: fragmentedText(Array(string.utf8)),
                    outcome: .messages([.text(string)])))
        }
        for (name, bytes) in invalid {
            cases.append(
                WebSocketConformanceCase(
                    id: "6.x \(name)", frames: [frame(Op.text, bytes)], outcome: .failed(closeCode: 1007)))
            cases.append(
                WebSocketConformanceCase(
                    id: "6.x \(name), fragmented", frames: fragmentedText(bytes), outcome: .failed(closeCode: 1007)))
        }
        return cases
    }()

    /// Section 7, closing: valid codes are reported (application codes too, as Darwin's enumeration holds them),
    /// invalid codes and malformed close frames fail with 1002, a reason that is not UTF-8 with 1007.
    static let closing: [WebSocketConformanceCase] =
        [
            WebSocketConformanceCase(
                id: "7.3.1 empty close", frames: [frame(Op.close, [])], outcome: .closed(code: 1005)),
            WebSocketConformanceCase(
                id: "7.3.2 one-byte close", frames: [frame(Op.close, [0x03])], outcome: .failed(closeCode: 1002)),
            WebSocketConformanceCase(
                id: "7.3.3 close with a reason", frames: [close(1000, Array("bye".utf8))], outcome: .closed(code: 1000)),
            WebSocketConformanceCase(
                id: "7.5.1 close reason not UTF-8", frames: [close(1000, [0xCE, 0xBA, 0xE1, 0xBD, 0xFF])],
                outcome: .failed(closeCode: 1007)),
            WebSocketConformanceCase(
                id: "7.1.x text after close is ignored", frames: [close(1000), text("late")],
                outcome: .closed(code: 1000)),
        ]
        + [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000, 4999].map { code in
            WebSocketConformanceCase(
                id: "7.7 valid code \(code)", frames: [close(UInt16(code))],
                outcome: .closed(code: code))
        }
        + [0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535].map { code in
            WebSocketConformanceCase(
                id: "7.9 invalid code \(code)", frames: [close(UInt16(code))], outcome: .failed(closeCode: 1002))
        }
}

/// The framing, UTF-8 and closing sections of the Autobahn test suite's client cases, reproduced with the mock
/// server's raw frames: each case sends its frames to a `URLSessionWebSocketTask` and checks what the task delivers
/// and how it closes. (Autobahn itself needs Python and a network; these run on loopback in the suite.)
// Serialized: 105 servers and clients at once are a load spike that stalls every other test on a 2-core machine.
@Suite("WebSocket conformance (Autobahn-style)", .serialized)
struct WebSocketConformanceTests {
    @Test(arguments: WebSocketConformanceCase.framing)
    func framing(_ testCase: WebSocketConformanceCase) async throws { try await run(testCase) }

    @Test(arguments: WebSocketConformanceCase.controlAndFragmentation)
    func controlFramesAndFragmentation(_ testCase: WebSocketConformanceCase) async throws { try await run(testCase) }

    @Test(arguments: WebSocketConformanceCase.utf8)
    func utf8Handling(_ testCase: WebSocketConformanceCase) async throws { try await run(testCase) }

    @Test(arguments: WebSocketConformanceCase.closing)
    func closing(_ testCase: WebSocketConformanceCase) async throws { try await run(testCase) }

    private func run(_ testCase: WebSocketConformanceCase) async throws {
        try await withServer { server in
            var steps = testCase.frames.map { MockWebSocketStep.sendRaw($0) }
            if case .messages = testCase.outcome {
                // Time for the pongs, then a normal close.
                steps += [.wait(.milliseconds(100)), .close(code: 1000)]
            } else {
                // A client that only failed once the server gave up would take 30 s.
                steps.append(.wait(.seconds(30)))
            }
            server.webSocket("/case", endpoint: MockWebSocketEndpoint(behaviour: .script(steps)))
            let session = makeSession()
            defer { session.invalidateAndCancel() }
            let task = session.webSocketTask(with: try WebSocketTaskTests.webSocketURL(server, "/case"))
            task.resume()
            let start = ContinuousClock.now
            // A client that waits for more than the case sends must fail the test, not hang it.
            let watchdog = Task {
                try await Task.sleep(for: .seconds(40))
                task.cancel()
            }
            defer { watchdog.cancel() }
            var received: [WebSocketConformanceCase.Message] = []
            var failure: (any Error)?
            while failure == nil {
                do {
                    switch try await task.receive() {
                    case .string(let text): received.append(.text(text))
                    case .data(let data): received.append(.data(data))
                    @unknown default: Issue.record("an unknown message kind")
                    }
                } catch {
                    failure = error
                }
            }
            // No case waits for the server to give up (30 s); room for a machine that stalls for seconds.
            #expect(ContinuousClock.now - start < .seconds(25))
            switch testCase.outcome {
            case .messages(let expected, let pongs):
                #expect(received == expected)
                #expect(task.closeCode == .normalClosure)
                let seen = server.webSocketMessages(path: "/case").compactMap { message -> [UInt8]? in
                    if case .pong(let data) = message { return Array(data) }
                    return nil
                }
                #expect(seen == pongs)
            case .closed(let code):
                #expect(received.isEmpty)
                #expect(task.closeCode.rawValue == code)
                #expect(!(failure is URLError), "a valid close is not a failure: \(String(describing: failure))")
            case .failed(let closeCode):
                #expect((failure as? URLError)?.code == .badServerResponse)
                #expect(task.closeCode.rawValue == closeCode)
            }
        }
    }
}
