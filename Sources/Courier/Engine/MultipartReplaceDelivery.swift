import CourierHTTP
import Foundation
import NIOCore

/// A `multipart/x-mixed-replace` response being delivered part by part, as Darwin does: each part becomes a
/// response of its own (the outer status, the part's header fields) followed by its body — with the data delegate's
/// `didReceive response` asked for each, so that the app discards what the previous part delivered.
///
/// The engine feeds it the decoded body; it hands back what to do. While the app decides about a part, events
/// parsed after that part's head wait here and the engine keeps the source paused. A class confined to the engine's
/// executor, so that the engine holds one reference rather than the delivery's room.
final class MultipartReplaceDelivery {
    /// What the engine does next.
    enum Step {
        /// Ask the app about this part's response (then ``answered(allow:)``).
        case decide(HTTPURLResponse)
        /// The part's response, accepted (or nobody asks): record it.
        case response(HTTPURLResponse)
        /// Body bytes of the current part.
        case data(Data)
    }

    private var parser: MultipartReplaceParser
    private let outer: HTTPURLResponse
    private let asksForResponses: Bool
    /// Parsed events not handed on yet; a ring, so that taking the first of the thousands one read of tiny parts
    /// gives does not move all the others.
    private var queued = CircularBuffer<MultipartReplaceParser.Event>()
    private var decidingAbout: HTTPURLResponse?

    /// Whether a part's response waits for the app (the source stays paused meanwhile).
    var isDeciding: Bool { decidingAbout != nil }

    /// Delivery for `response` when it is `multipart/x-mixed-replace` with a boundary; else `nil`. A factory rather
    /// than a failable initializer: a class's failable initializer allocates the object before it can fail, and
    /// every response is asked.
    static func make(for response: URLResponse, asksForResponses: Bool) -> MultipartReplaceDelivery? {
        guard let http = response as? HTTPURLResponse,
            let contentType = http.value(forHTTPHeaderField: "Content-Type"),
            Self.mayBeMultipart(contentType),
            let parser = MultipartReplaceParser(contentType: contentType)
        else { return nil }
        return MultipartReplaceDelivery(parser: parser, outer: http, asksForResponses: asksForResponses)
    }

    private init(parser: MultipartReplaceParser, outer: HTTPURLResponse, asksForResponses: Bool) {
        self.parser = parser
        self.outer = outer
        self.asksForResponses = asksForResponses
    }

    /// A byte check before the parse, made for every response: only a value starting with `m` (any case, after
    /// blanks) can be `multipart/x-mixed-replace`.
    private static func mayBeMultipart(_ contentType: String) -> Bool {
        let first = contentType.utf8.first { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }
        return first.map { $0 | 0x20 == UInt8(ascii: "m") } ?? false
    }

    /// Whether a response is one the disposition stage leaves to this delivery (it asks about each part instead).
    static func handles(_ response: URLResponse) -> Bool {
        guard let contentType = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Type") else {
            return false
        }
        return MultipartReplaceParser(contentType: contentType) != nil
    }

    /// Takes decoded body bytes.
    func feed(_ bytes: Data) throws(TransferError) -> [Step] {
        let events = try parser.feed(bytes)
        queued.append(contentsOf: events)
        return drain()
    }

    /// The body ended: a part still open ends with it.
    func finish() -> [Step] {
        queued.append(contentsOf: parser.finish())
        return drain()
    }

    /// The app allowed the part's response (or the task goes on without asking).
    func answered() -> [Step] {
        guard let response = decidingAbout else { return [] }
        decidingAbout = nil
        return [.response(response)] + drain()
    }

    /// Whether everything parsed has been handed on.
    var isIdle: Bool { queued.isEmpty && decidingAbout == nil }

    private func drain() -> [Step] {
        var steps: [Step] = []
        while decidingAbout == nil, !queued.isEmpty {
            switch queued.removeFirst() {
            case .partHead(let fields):
                let response = partResponse(fields)
                if asksForResponses {
                    decidingAbout = response
                    steps.append(.decide(response))
                } else {
                    steps.append(.response(response))
                }
            case .partBody(let bytes):
                steps.append(.data(Data(bytes)))
            case .partEnd:
                break
            }
        }
        return steps
    }

    /// A part's response: the outer response's URL, status and version, with the part's header fields.
    private func partResponse(_ fields: [MultipartReplaceParser.Field]) -> HTTPURLResponse {
        let url = outer.url ?? URL(fileURLWithPath: "/")
        return HTTPURLResponse(
            url: url, statusCode: outer.statusCode, httpVersion: outer.httpVersion,
            headerFieldPairs: fields.map { ($0.name, $0.value) })
    }
}
