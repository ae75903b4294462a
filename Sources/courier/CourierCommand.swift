import ArgumentParser
import Courier
import Foundation

/// The `courier` command-line tool.
@main
struct CourierCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "courier",
        abstract: "Download and load URLs with Courier, Apple's URLSession API on SwiftNIO.",
        discussion: """
            'courier get URL' (or just 'courier URL') loads a URL and writes its body to standard output or a file, \
            with a progress bar on the terminal, resumable downloads (-C -), retries (--retry) and parallel \
            transfers (-Z). Options follow curl's names. 'courier help get' describes every option.
            """,
        subcommands: [GetCommand.self, QueueCommand.self, DaemonCommand.self],
        defaultSubcommand: GetCommand.self
    )
}
