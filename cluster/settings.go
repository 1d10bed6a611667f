package cluster

import (
	"fmt"
	"strconv"
)

// Settings configure the nodes a runtime starts: what "chaos broker" and
// "chaos controller" take as flags (docs/broker.md, "chaos broker" and
// "chaos controller"). The controller's are the defaults of topics it creates.
type Settings struct {
	// Brokers.
	ReplicaLagTimeMaxMs   int64  `json:"replica_lag_time_max_ms"`
	ReplicaLagMaxMessages int64  `json:"replica_lag_max_messages"`
	ReplicaFetchWaitMaxMs int32  `json:"replica_fetch_wait_max_ms"`
	HeartbeatIntervalMs   int64  `json:"heartbeat_interval_ms"`
	Fsync                 string `json:"fsync"`
	LoseUnsynced          bool   `json:"lose_unsynced"`
	NoAutoCreateTopics    bool   `json:"no_auto_create_topics,omitempty"`
	// The controller.
	SessionTimeoutMs  int64  `json:"session_timeout_ms"`
	Partitions        int32  `json:"partitions"`
	ReplicationFactor int16  `json:"replication_factor"`
	MinInsyncReplicas int32  `json:"min_insync_replicas"`
	Election          string `json:"election"`
	// Bugs are bugs planted on purpose, by name (chaos bugs lists them):
	// none in a real test. Every node gets the whole list (--bug) and
	// takes the bugs that live in it, ignoring the others; the nodes
	// refuse an unknown name.
	Bugs []string `json:"bugs,omitempty"`
}

// DefaultSettings are the brokers' and the controller's own defaults
// (cmd/chaos's tests check that they agree with broker/core and
// broker/controller).
func DefaultSettings() Settings {
	return Settings{
		ReplicaLagTimeMaxMs: 10000, ReplicaLagMaxMessages: 4000, ReplicaFetchWaitMaxMs: 500, HeartbeatIntervalMs: 250,
		Fsync: "never", SessionTimeoutMs: 3000, Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 1, Election: "clean",
	}
}

// BrokerArgs are the flags of "chaos broker" for these settings.
func (s Settings) BrokerArgs() []string {
	a := []string{
		"--replica-lag-time-max-ms", strconv.FormatInt(s.ReplicaLagTimeMaxMs, 10),
		"--replica-lag-max-messages", strconv.FormatInt(s.ReplicaLagMaxMessages, 10),
		"--replica-fetch-wait-max-ms", strconv.FormatInt(int64(s.ReplicaFetchWaitMaxMs), 10),
		"--heartbeat-interval-ms", strconv.FormatInt(s.HeartbeatIntervalMs, 10),
		"--fsync", s.Fsync,
	}
	if s.LoseUnsynced {
		a = append(a, "--lose-unsynced")
	}
	if s.NoAutoCreateTopics {
		a = append(a, "--no-auto-create-topics")
	}
	return append(a, s.bugArgs()...)
}

// bugArgs are the --bug flags both kinds of node take.
func (s Settings) bugArgs() []string {
	var a []string
	for _, b := range s.Bugs {
		a = append(a, "--bug", b)
	}
	return a
}

// ControllerArgs are the flags of "chaos controller" for these settings.
func (s Settings) ControllerArgs() []string {
	a := []string{
		"--session-timeout-ms", strconv.FormatInt(s.SessionTimeoutMs, 10), "--partitions", fmt.Sprint(s.Partitions),
		"--replication-factor", fmt.Sprint(s.ReplicationFactor), "--min-insync-replicas", fmt.Sprint(s.MinInsyncReplicas),
		"--election", s.Election,
	}
	return append(a, s.bugArgs()...)
}
