package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/broker/storage"
	"github.com/chaos-isr/chaos/nemesis"
)

// Every command refuses a bad flag value in one style, naming the flag, the
// value and what it accepts:
//
//	--NAME: WHAT IS WRONG, got VALUE; WHAT IS ACCEPTED
//
// The checks below run before a command starts anything; the library
// packages validate their configurations again, but their errors name
// fields, not flags.

// flagError is a refused flag value in that style. got is left out when
// nil (a required flag that is missing), accepted when empty.
func flagError(name string, got any, problem, accepted string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "--%s: %s", name, problem)
	if got != nil {
		b.WriteString(", got ")
		switch v := got.(type) {
		case string:
			b.WriteString(strconv.Quote(v))
		case time.Duration:
			b.WriteString(v.String())
		default:
			fmt.Fprint(&b, v)
		}
	}
	if accepted != "" {
		b.WriteString("; " + accepted)
	}
	return errors.New(b.String())
}

// flagParseError rewrites the errors of the flag parser (cobra's
// FlagErrorFunc) into the same style: pflag's own name the flag but talk
// of strconv.ParseFloat.
func flagParseError(cmd *cobra.Command, err error) error {
	var iv *pflag.InvalidValueError
	var ne *pflag.NotExistError
	var vr *pflag.ValueRequiredError
	switch {
	case errors.As(err, &iv):
		f := iv.GetFlag()
		what, accepted := "not a valid value", ""
		switch f.Value.Type() {
		case "int", "int8", "int16", "int32", "int64":
			what, accepted = "not a whole number", "e.g. --"+f.Name+" "+cmp.Or(f.DefValue, "1")
		case "uint", "uint8", "uint16", "uint32", "uint64":
			what, accepted = "not a whole number of 0 or more", "e.g. --"+f.Name+" 42"
		case "float32", "float64":
			what, accepted = "not a number", "e.g. --"+f.Name+" "+cmp.Or(f.DefValue, "1")
		case "duration":
			what, accepted = "not a duration", "a number with a unit, e.g. 30s, 500ms or 2m"
		case "bool":
			what, accepted = "not true or false", "--"+f.Name+" alone means true"
		case "stringToString":
			what, accepted = "not KEY=VALUE", "e.g. --"+f.Name+" 2=127.0.0.1:9093"
		}
		if errors.Is(err, strconv.ErrRange) {
			what = "out of range for a " + f.Value.Type()
		}
		return flagError(f.Name, iv.GetValue(), what, accepted)
	case errors.As(err, &ne):
		name := "--" + ne.GetSpecifiedName()
		if len(ne.GetSpecifiedName()) == 1 || ne.GetSpecifiedShortnames() != "" {
			name = "-" + ne.GetSpecifiedName()
		}
		return fmt.Errorf("%s: no such flag for %s; %s --help lists them", name, cmd.CommandPath(), cmd.CommandPath())
	case errors.As(err, &vr):
		return flagError(vr.GetFlag().Name, nil, "needs a value", cmd.CommandPath()+" --help says which")
	}
	return err
}

// parseAcks reads --acks.
func parseAcks(s string) (int16, error) {
	switch strings.ToLower(s) {
	case "0":
		return 0, nil
	case "1":
		return 1, nil
	case "-1", "all":
		return -1, nil
	}
	return 0, flagError("acks", s, "not an acks setting", "use 0, 1, -1 or all")
}

func checkElection(s string) error {
	if s != "clean" && s != "unclean" {
		return flagError("election", s, "not an election policy", "use clean or unclean")
	}
	return nil
}

// parseNemesisFlag reads --nemesis: none, or a comma list of faults.
func parseNemesisFlag(s string) ([]string, error) {
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if _, ok := nemesis.Lookup(f); !ok && f != "none" && f != "" {
			return nil, flagError("nemesis", f, "not a fault", "use none or a comma list of: "+strings.Join(nemesis.Names(), ", "))
		}
	}
	faults, err := nemesis.Parse(s)
	if err != nil {
		return nil, flagError("nemesis", s, err.Error(), "")
	}
	return faults, nil
}

const fsyncAccepted = "use never, always, interval (every 1s) or interval:DURATION in whole milliseconds, e.g. interval:100ms"

// parseFsyncFlag reads --fsync. A bare duration ("100ms") is refused: the
// policy is always named, as the help and the README spell it.
func parseFsyncFlag(s string) (storage.Fsync, int64, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	d, isInterval := strings.CutPrefix(v, "interval:")
	if v != "never" && v != "always" && v != "interval" && !isInterval {
		return 0, 0, flagError("fsync", s, "not an fsync policy", fsyncAccepted)
	}
	p, ms, err := storage.ParseFsync(v)
	if err != nil {
		what := "not a duration after interval:"
		if _, derr := time.ParseDuration(d); derr == nil {
			what = "not a whole number of milliseconds above 0 after interval:"
		}
		return 0, 0, flagError("fsync", s, what, fsyncAccepted)
	}
	return p, ms, nil
}

// checkHostPort checks an address flag: HOST:PORT with a port number.
func checkHostPort(name, v, example string) error {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return flagError(name, v, "not HOST:PORT", "e.g. --"+name+" "+example)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return flagError(name, v, "not a port number (0-65535) after the colon", "e.g. --"+name+" "+example)
	}
	return nil
}

// checkBasePort checks --base-port: the controller takes base-port-1 and
// the brokers base-port..base-port+nodes-1. free says 0 means "free ports".
func checkBasePort(base, nodes int, free bool) error {
	if free && base == 0 {
		return nil
	}
	if base < 2 || base+nodes-1 > 65535 {
		accepted := fmt.Sprintf("a port from 2 to %d, so that the controller (base-port-1) and %d broker(s) fit below 65536", 65536-nodes, nodes)
		if free {
			accepted += ", or 0 for free ports"
		}
		return flagError("base-port", base, "out of range", accepted)
	}
	return nil
}

// checkNodes checks --nodes against the replication factor the topic asks
// for.
func checkNodes(nodes int, rf int16) error {
	if nodes < 1 {
		return flagError("nodes", nodes, "fewer than 1", "the number of brokers, 1 or more")
	}
	if int(rf) > nodes {
		return flagError("replication-factor", rf, fmt.Sprintf("above --nodes %d", nodes), "at most the number of brokers: a partition's replicas sit on distinct brokers")
	}
	return nil
}

// validate checks the broker flags.
func (f *replicationFlags) validate() error {
	switch {
	case f.lagTimeMs <= 0:
		return flagError("replica-lag-time-max-ms", f.lagTimeMs, "not positive", "a number of milliseconds, e.g. 10000")
	case f.lagMessages < 0:
		return flagError("replica-lag-max-messages", f.lagMessages, "negative", "a number of messages, or 0 to turn the rule off")
	case f.fetchWaitMs < 0:
		return flagError("replica-fetch-wait-max-ms", f.fetchWaitMs, "negative", "a number of milliseconds below --replica-lag-time-max-ms")
	case int64(f.fetchWaitMs) >= f.lagTimeMs:
		return flagError("replica-fetch-wait-max-ms", f.fetchWaitMs, fmt.Sprintf("not below --replica-lag-time-max-ms %d", f.lagTimeMs),
			"a shorter wait, or idle followers would drop out of the ISR")
	case f.heartbeatMs <= 0:
		return flagError("heartbeat-interval-ms", f.heartbeatMs, "not positive", "a number of milliseconds, e.g. 250")
	}
	_, _, err := parseFsyncFlag(f.fsync)
	return err
}

// validate checks the controller's topic flags.
func (f *topicFlags) validate() error {
	switch {
	case f.sessionMs <= 0:
		return flagError("session-timeout-ms", f.sessionMs, "not positive", "a number of milliseconds, e.g. 3000")
	case f.partitions < 1:
		return flagError("partitions", f.partitions, "fewer than 1", "1 or more")
	case f.rf < 1:
		return flagError("replication-factor", f.rf, "fewer than 1", "1 or more, at most the number of brokers")
	case f.minISR < 1:
		return flagError("min-insync-replicas", f.minISR, "fewer than 1", "1 or more, at most --replication-factor")
	case f.minISR > int32(f.rf):
		return flagError("min-insync-replicas", f.minISR, fmt.Sprintf("above --replication-factor %d", f.rf),
			"at most the replication factor, or acks=-1 writes could never succeed")
	}
	return checkElection(f.election)
}

// validate checks every flag of chaos run and returns the acks and the
// faults they name.
func (f *runFlags) validate() (int16, []string, error) {
	acks, err := parseAcks(f.acks)
	if err != nil {
		return 0, nil, err
	}
	faults, err := parseNemesisFlag(f.nemesis)
	if err != nil {
		return 0, nil, err
	}
	if err := checkRuntime(f.runtime); err != nil {
		return 0, nil, err
	}
	if err := checkNodes(f.nodes, f.tf.rf); err != nil {
		return 0, nil, err
	}
	if err := checkBasePort(f.basePort, f.nodes, true); err != nil {
		return 0, nil, err
	}
	switch {
	case f.concurrency < 1:
		err = flagError("concurrency", f.concurrency, "fewer than 1", "the number of producers, 1 or more")
	case f.consumers < -1:
		err = flagError("consumers", f.consumers, "negative", "0 or more (default: one per partition)")
	case f.rate < 0:
		err = flagError("rate", f.rate, "negative", "sends per second, or 0 for as fast as the producers go")
	case math.IsNaN(f.rate) || math.IsInf(f.rate, 0):
		err = flagError("rate", f.rate, "not a finite number", "sends per second, or 0 for as fast as the producers go")
	case f.timeLimit <= 0:
		err = flagError("time-limit", f.timeLimit, "not positive", "a duration such as 30s or 5m")
	case len(faults) > 0 && f.nemInterval <= 0:
		err = flagError("nemesis-interval", f.nemInterval, "not positive", "a duration such as 10s: the faults need windows")
	case f.reqTimeout <= 0:
		err = flagError("request-timeout", f.reqTimeout, "not positive", "a duration such as 5s")
	case f.converge <= 0:
		err = flagError("converge-timeout", f.converge, "not positive", "a duration such as 60s")
	case f.monitor < 0:
		err = flagError("monitor-interval", f.monitor, "negative", "a duration such as 250ms, or 0 for no monitor")
	}
	if err != nil {
		return 0, nil, err
	}
	if err := f.tf.validate(); err != nil {
		return 0, nil, err
	}
	if err := f.rf.validate(); err != nil {
		return 0, nil, err
	}
	if _, err := f.bugs.parse(); err != nil {
		return 0, nil, err
	}
	return acks, faults, nil
}

// validateOnlyKey marks a context in which commands stop once their flags
// and arguments are checked (see validateOnly).
type validateOnlyKey struct{}

// errValidated is what a command returns in a validation-only context
// instead of starting anything.
var errValidated = errors.New("flags and arguments accepted; nothing started (validation only)")

// validateOnly returns a context in which every command that would start
// something (a cluster, a run, a campaign, a server) checks its flags and
// arguments as usual and then returns errValidated instead. The README's
// test executes every documented command this way.
func validateOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, validateOnlyKey{}, true)
}

// stopIfValidating returns errValidated in a validation-only context: the
// last thing a command does before it starts anything.
func stopIfValidating(cmd *cobra.Command) error {
	if ctx := cmd.Context(); ctx != nil && ctx.Value(validateOnlyKey{}) != nil {
		return errValidated
	}
	return nil
}
