// Package runner is the test lifecycle as a library, in the manner of
// Jepsen's core/run!: a Spec in, an Outcome out. Run validates the spec,
// starts the cluster in its runtime and checks that the cluster it talks
// to is the one it started, creates and verifies the topic, runs the
// workload while the nemesis injects the schedule's faults and the monitor
// samples the cluster, heals, waits for convergence, runs the final reads,
// judges the stored history and writes the report. chaos run maps flags to
// a Spec and the Outcome to an exit code; a campaign runs Specs in-process
// or in child processes that read their Spec from a file and write their
// Outcome to another (package campaign, chaos run --spec-file).
//
// The commands that make a Spec from flags check each value with this
// package first (ParseAcks, ParseFaults, Spec.CheckFlags), so that a
// refusal names the flag; Validate names the Spec's fields. chaos run's
// flags themselves are here (Flags, which chaos sim takes too, and the
// nodes' flags that chaos broker, controller and cluster up share), so
// that the command only binds them to its flag set. Outcome.Say
// prints how a run ended. The commands that act on a cluster or a stored
// run without running a test are here too, as they use the same runtimes
// and judge the same way: chaos cluster up and clean (Up, Clean) and chaos
// check (Check).
//
// What varies between worlds is only the runtime that starts the cluster
// (StartCluster: local processes or docker containers, with their network
// fabric); everything above it is the same code.
package runner
