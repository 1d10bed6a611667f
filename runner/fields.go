package runner

import (
	"errors"
	"strings"

	"github.com/chaos-isr/chaos/internal/cli"
)

// Field is one setting of a Spec as its two readers name it: the flag
// that sets it (chaos run, sim, campaign and hunt) and its JSON name in a
// stored spec (a campaign's child runs, a hunt's draws, --spec files).
type Field struct{ Flag, JSON string }

// fields are the Spec's settings that Validate judges one by one. A rule
// is written once, in Validate (or in the package that owns the setting:
// broker/node for the brokers' and the controller's), naming the flag; the
// table gives the JSON name a spec's reader sees.
var fields = []Field{
	{"runtime", "runtime"}, {"store", "store"}, {"nodes", "nodes"}, {"base-port", "base_port"},
	{"partitions", "settings.partitions"}, {"replication-factor", "settings.replication_factor"},
	{"min-insync-replicas", "settings.min_insync_replicas"}, {"election", "settings.election"},
	{"session-timeout-ms", "settings.session_timeout_ms"}, {"replica-lag-time-max-ms", "settings.replica_lag_time_max_ms"},
	{"replica-lag-max-messages", "settings.replica_lag_max_messages"}, {"replica-fetch-wait-max-ms", "settings.replica_fetch_wait_max_ms"},
	{"heartbeat-interval-ms", "settings.heartbeat_interval_ms"}, {"fsync", "settings.fsync"},
	{"lose-unsynced", "settings.lose_unsynced"}, {"bug", "settings.bugs"},
	{"acks", "acks"}, {"concurrency", "concurrency"}, {"consumers", "consumers"}, {"rate", "rate"},
	{"time-limit", "time_limit"}, {"request-timeout", "request_timeout"}, {"retries", "retries"},
	{"idempotent", "idempotent"}, {"max-in-flight", "max_in_flight"}, {"sub-via", "sub_via"}, {"workload", "workload"},
	{"nemesis", "faults"}, {"nemesis-interval", "nemesis_interval"}, {"nemesis-overlap", "nemesis_overlap"},
	{"converge-timeout", "converge_timeout"}, {"monitor-interval", "monitor_interval"}, {"liveness-bound", "liveness_bound"},
}

// FieldOf is the field the flag named flag sets; a flag the table lacks
// is named in JSON as its flag, underscored (TestFieldsNameFlags holds
// the table to chaos run's flags).
func FieldOf(flag string) Field {
	for _, f := range fields {
		if f.Flag == flag {
			return f
		}
	}
	return Field{Flag: flag, JSON: strings.ReplaceAll(flag, "-", "_")}
}

// FieldError is a setting Validate refuses. It says so with the field's
// JSON name; FlagError says the same with the flag's.
type FieldError struct {
	Field Field
	Flag  *cli.FlagError
}

func (e *FieldError) Error() string { return e.Flag.Say(e.Field.JSON) }

// FlagError is the refusal in the flags' words.
func (e *FieldError) FlagError() error { return e.Flag }

// fieldError is the refusal of flag's setting, valued got.
func fieldError(flag string, got any, problem, accepted string) *FieldError {
	return &FieldError{Field: FieldOf(flag), Flag: &cli.FlagError{Name: flag, Got: got, Problem: problem, Accepted: accepted}}
}

// asField names a refusal of a package that judges a setting by its flag
// (broker/node, which chaos broker and chaos controller run) by its field
// too; other errors pass as they are.
func asField(err error) error {
	var fe *cli.FlagError
	if err == nil || !errors.As(err, &fe) {
		return err
	}
	return &FieldError{Field: FieldOf(fe.Name), Flag: fe}
}

// firstFieldError is the first refusal of a setting among err's (a
// joined error is searched in order), nil if none is one.
func firstFieldError(err error) *FieldError {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe
	}
	return nil
}
