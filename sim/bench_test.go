package sim

import (
	"context"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/runner"
)

// defaultShape is make run's test in simulation: 3 brokers, 3 partitions,
// 5 producers at 500 sends/s, one consumer per partition, the mixed
// nemesis, 60 s.
func defaultShape(b testing.TB, seed uint64) runner.Spec {
	s := runner.DefaultSpec()
	s.Runtime, s.Store, s.Seed = runner.RuntimeSim, b.TempDir(), seed
	s.Faults = []string{"kill", "partition", "pause", "slow-follower"}
	return s
}

// BenchmarkSimulate60s times the simulation of the default test alone:
// the cluster, the workload, the nemesis, the monitor and the final phase,
// writing history.jsonl. sim-s/s is simulated seconds per wall second.
func BenchmarkSimulate60s(b *testing.B) {
	var wall time.Duration
	for i := range b.N {
		spec := defaultShape(b, uint64(i+1)).Normalized()
		dir, err := newRunDir(spec.Store, spec.Name)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, _, err := simulate(context.Background(), spec, dir, "sim", runner.Options{}); err != nil {
			b.Fatal(err)
		}
		wall += time.Since(start)
	}
	b.ReportMetric(float64(b.N)*60/wall.Seconds(), "sim-s/s")
}

// BenchmarkRun60s times a whole simulated run of the default test: the
// simulation, then the checkers, results.json and report.html. runs/min
// is how many such runs one core does in a minute.
func BenchmarkRun60s(b *testing.B) {
	var wall time.Duration
	for i := range b.N {
		spec := defaultShape(b, uint64(i+1))
		start := time.Now()
		o, err := Run(context.Background(), spec, runner.Options{})
		if err != nil || o.Verdict == "" {
			b.Fatalf("%v %+v", err, o)
		}
		wall += time.Since(start)
	}
	b.ReportMetric(float64(b.N)*60/wall.Seconds(), "sim-s/s")
	b.ReportMetric(float64(b.N)/wall.Minutes(), "runs/min")
}
