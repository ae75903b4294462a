import ArgumentParser
import Courier
import Foundation

/// The `courier` command-line tool.
@main
struct CourierCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "courier",
        abstract: "A URL loading tool built on Courier, Apple's URLSession API on SwiftNIO.",
        subcommands: [GetCommand.self]
    )
}
