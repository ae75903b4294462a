import ArgumentParser
import Courier
import Foundation

/// `courier get URL`: loads a URL and writes the body to standard output or a file.
struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Load a URL and write its body to standard output or to a file."
    )

    @Argument(help: "The http or https URL to load.")
    var url: String

    @Option(name: .shortAndLong, help: "Write the body to this file (written in full or not at all).")
    var output: String?

    @Option(name: [.customShort("H"), .customLong("header")], help: "A request header, 'Name: value'. Repeatable.")
    var headers: [String] = []

    @Option(name: [.customShort("X"), .customLong("request")], help: "The request method.")
    var method: String?

    @Option(name: [.customShort("d"), .customLong("data")], help: "A request body; the method defaults to POST.")
    var data: String?

    @Flag(name: [.customShort("i"), .customLong("include")], help: "Include the status line and headers.")
    var includeHeaders = false

    @Flag(
        name: [.customShort("f"), .customLong("fail")],
        help: "Exit with status 22 when the server answers 400 or above.")
    var failOnHTTPError = false

    func run() async throws {
        do {
            try await perform()
        } catch let error as CLIError {
            FileHandle.standardError.write(Data("courier: \(error.description)\n".utf8))
            throw ExitCode(error.exitCode)
        }
    }

    private func perform() async throws {
        let request = try makeRequest()
        let sink: OutputSink
        do {
            sink = try OutputSink(path: output)
        } catch {
            throw CLIError("cannot write \(output ?? "-"): \(error.localizedDescription)")
        }
        let interruptions = InterruptionHandler(onInterrupt: sink.abandon)
        defer { interruptions.stop() }
        let delegate = GetDelegate(sink: sink, includeHeaders: includeHeaders)
        let configuration = URLSessionConfiguration.default
        // The body streams to a file or standard output at the pace they take it, never piling up in memory, so
        // like curl the tool does not cap how far a compressed body may inflate.
        configuration.courierMaximumDecompressionRatio = nil
        // Like curl, the tool keeps no HTTP cache: every run asks the server.
        configuration.urlCache = nil
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let outcome = await delegate.run(session.dataTask(with: request))
        switch outcome {
        case .failure(let error):
            sink.discard()
            throw CLIError(
                "\(request.url?.absoluteString ?? url): \(error.localizedDescription) (URLError \(error.code.rawValue))"
            )
        case .success(let status):
            // With --fail an error answer is not the file the user asked for: nothing is written (as curl -f).
            if failOnHTTPError && status >= 400 {
                sink.discard()
                throw CLIError("the server answered \(status)", exitCode: 22)
            }
            do {
                try sink.commit()
            } catch {
                throw CLIError("cannot write \(output ?? "-"): \(error.localizedDescription)")
            }
        }
    }

    private func makeRequest() throws -> URLRequest {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(),
            scheme == "http" || scheme == "https", parsed.host != nil
        else {
            throw CLIError("not an http or https URL: \(url)")
        }
        var request = URLRequest(url: parsed)
        for header in headers {
            guard let colon = header.firstIndex(of: ":") else {
                throw CLIError("a header must look like 'Name: value': \(header)")
            }
            let name = header[..<colon].trimmingCharacters(in: .whitespaces)
            let value = header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty else { throw CLIError("a header has no name: \(header)") }
            request.addValue(value, forHTTPHeaderField: name)
        }
        if let data {
            request.httpBody = Data(data.utf8)
            request.httpMethod = "POST"
            if request.value(forHTTPHeaderField: "Content-Type") == nil {
                request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
            }
        }
        if let method {
            request.httpMethod = method.uppercased()
        }
        return request
    }
}

/// A failure the tool reports on standard error with an exit status.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    let exitCode: Int32

    init(_ description: String, exitCode: Int32 = 1) {
        self.description = description
        self.exitCode = exitCode
    }
}
