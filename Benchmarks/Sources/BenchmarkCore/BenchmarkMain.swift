import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The entry point every client executable calls: parse the command line, run one scenario, print one JSON
/// line, exit 0 when the run counts (or the client does not support the scenario) and 1 when it failed.
public enum BenchmarkMain {
    public static func run<Client: BenchmarkClient>(_ client: Client.Type) async -> Never {
        let options: BenchmarkOptions
        do {
            options = try BenchmarkOptions.parse(Array(CommandLine.arguments.dropFirst()))
        } catch {
            FileHandle.standardError.write(Data("\(Client.name)-bench: \(error)\n".utf8))
            exit(2)
        }
        var measurement = await measure(Client.self, options: options)
        measurement.recordResourceUsage()
        FileHandle.standardOutput.write(Data((measurement.jsonLine() + "\n").utf8))
        exit(measurement.status == "error" ? 1 : 0)
    }

    static func measure<Client: BenchmarkClient>(_ type: Client.Type, options: BenchmarkOptions) async -> Measurement {
        var measurement = Measurement(client: Client.name, scenario: options.scenario.rawValue, status: "ok")
        let settings: ClientSettings
        do {
            settings = ClientSettings(
                scenario: options.scenario,
                maximumConnectionsPerHost: options.connectionsPerHost,
                trustedCertificateDER: try options.certificateDER.map { try Data(contentsOf: $0) },
                trustedCertificatePEMPath: options.certificatePEM?.path,
                scratchDirectory: options.scratch,
                proxy: options.scenario == .h ? options.proxy : nil
            )
        } catch {
            measurement.status = "error"
            measurement.detail = "cannot read the certificate: \(error)"
            return measurement
        }
        let client: Client
        do {
            client = try await Client(settings: settings)
        } catch let unsupported as ScenarioUnsupported {
            measurement.status = unsupported.kind
            measurement.detail = unsupported.reason
            return measurement
        } catch {
            measurement.status = "error"
            measurement.detail = "cannot create the client: \(error)"
            return measurement
        }
        // The work's own CPU, without the process's start-up, the client's creation and its shutdown: Swift
        // processes spend tens of milliseconds starting, Go's a few, which would weigh on the CPU per request.
        let cpuBefore = Measurement.processCPUSeconds()
        do {
            try await Workload(options: options, settings: settings).run(client, into: &measurement)
        } catch let unsupported as ScenarioUnsupported {
            measurement.status = unsupported.kind
            measurement.detail = unsupported.reason
        } catch {
            measurement.status = "error"
            measurement.detail = "\(error)"
        }
        if let cpuBefore, let cpuAfter = Measurement.processCPUSeconds() {
            measurement.workCPUSeconds = cpuAfter - cpuBefore
        }
        do {
            try await client.shutdown()
        } catch {
            if measurement.status == "ok" {
                measurement.status = "error"
                measurement.detail = "shutdown failed: \(error)"
            }
        }
        return measurement
    }
}

extension BenchmarkOptions {
    /// Requests in flight: 1 for the sequential scenarios, all of them for (i), `concurrency` for the others.
    var concurrencyFor: Int {
        switch scenario {
        case .a, .j: return 1
        case .i: return requests
        default: return concurrency
        }
    }

    /// The most connections a client may open: `concurrency` for the concurrent scenarios (also (i), whose other
    /// requests queue in the client), 1 for the rest.
    var connectionsPerHost: Int {
        switch scenario {
        case .b, .e, .g, .h, .i, .k: return concurrency
        default: return 1
        }
    }
}
