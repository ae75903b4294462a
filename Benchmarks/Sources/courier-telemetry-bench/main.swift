import BenchmarkCore

await BenchmarkMain.run(URLSessionClient.self)
