import BenchmarkCore

await BenchmarkMain.run(AHCClient.self)
