// Package bench holds benchmarks that need a running cluster: how fast the
// broker takes writes end to end, through a real Kafka client.
//
// BenchmarkProduceCluster builds the chaos binary (internal/testbin), starts
// a controller and three brokers as child processes on free 127.0.0.1 ports
// (cluster.Start), creates a topic with three partitions and replication
// factor 3, and produces b.N records of 100 bytes with a franz-go producer at
// acks=-1. It reports records/s, MB/s and the p50/p99 latency of a record
// (from the Produce call to its promise). BenchmarkProduceClusterLeaderAck is
// the same at acks=1, to separate replication cost from the rest.
//
// BenchmarkProduceInProcess runs the same workload against brokers and a
// controller started inside the test process (server.StartBroker and
// StartController), so that -cpuprofile and -trace see the broker as well as
// the client:
//
//	go test -run=NONE -bench=InProcess -benchtime=300000x -cpuprofile=cpu.out ./bench/
//	go tool pprof -top bench.test cpu.out
//
// The cluster is started once per test binary and shared by the ramp-up
// runs of a benchmark; each run writes to the same topic. "make bench" runs
// these with a fixed record count (-benchtime=Nx) so results are comparable.
package bench
