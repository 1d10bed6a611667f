package results

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/workload"
)

// TestConfig is test.json: everything needed to understand and repeat a run.
type TestConfig struct {
	Name     string            `json:"name"`
	Seed     uint64            `json:"seed"`
	Start    time.Time         `json:"start"`
	Command  []string          `json:"command"`
	Versions map[string]string `json:"versions"`
	Cluster  ClusterConfig     `json:"cluster"`
	Workload workload.Config   `json:"workload"`
	Nemesis  []string          `json:"nemesis"` // fault kinds, as the guarantee model reads them
	Schedule nemesis.Schedule  `json:"schedule"`
	Converge time.Duration     `json:"converge_timeout"`
	// Convergence is how the final phase found the cluster.
	Convergence *workload.Convergence `json:"convergence,omitempty"`
}

// ClusterConfig is the system under test's configuration.
type ClusterConfig struct {
	Runtime string `json:"runtime"`
	// ClusterID is the id the tester gave the cluster it started, and
	// checked that every broker answered with before the workload began.
	ClusterID            string `json:"cluster_id,omitempty"`
	Nodes                int    `json:"nodes"`
	ReplicationFactor    int16  `json:"replication_factor"`
	MinInsyncReplicas    int32  `json:"min_insync_replicas"`
	Election             string `json:"election"`
	SessionTimeoutMs     int64  `json:"session_timeout_ms"`
	ReplicaLagTimeMaxMs  int64  `json:"replica_lag_time_max_ms"`
	ReplicaLagMaxMessage int64  `json:"replica_lag_max_messages"`
	Fsync                string `json:"fsync"`
	LoseUnsynced         bool   `json:"lose_unsynced"`
	// DelayMechanism is how the runtime delays links for network faults:
	// proxy (local), netem, or htb-rate (docker on a kernel without netem).
	DelayMechanism string `json:"delay_mechanism,omitempty"`
}

// ReadTestConfig reads a run's test.json.
func ReadTestConfig(path string) (TestConfig, error) { return readJSON[TestConfig](path) }

// ReadResults reads a run's results.json.
func ReadResults(path string) (*checker.Results, error) {
	res, err := readJSON[checker.Results](path)
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// readJSON reads one of the store's JSON files. A file that cannot be read
// fails with an *fs.PathError; one that does not decode, with its path and
// the decoding error: callers tell "missing" from "damaged" that way.
func readJSON[T any](path string) (T, error) {
	var v T
	b, err := os.ReadFile(path)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// CheckerConfig is what the guarantee model is told about the run: the
// replication settings, the faults asked for (the history records which
// ran), the storage settings that decide whether a kill destroys data,
// and chaos run's producers, with one request in flight and no retries.
func (tc TestConfig) CheckerConfig() checker.Config {
	return checker.Config{
		Acks: int(tc.Workload.Acks), MinInsyncReplicas: int(tc.Cluster.MinInsyncReplicas),
		Election: tc.Cluster.Election, ReplicationFactor: int(tc.Cluster.ReplicationFactor),
		Faults: tc.Nemesis, FaultsRecorded: true, LoseUnsynced: tc.Cluster.LoseUnsynced, Fsync: tc.Cluster.Fsync,
		MaxInFlight: 1,
	}
}
