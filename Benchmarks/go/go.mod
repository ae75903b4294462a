module courier/benchmarks/gobench

go 1.19
