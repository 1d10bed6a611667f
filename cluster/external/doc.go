// Package external is the runtime of a cluster the tester did not start:
// Apache Kafka, Redpanda, or chaos's own brokers started apart (chaos
// cluster up), reached at addresses the user gives. Like Jepsen's database
// hooks, it faults the cluster only through commands the user supplies,
// templates such as "ssh {host} sudo systemctl kill -s KILL kafka" or
// "docker kill {name}", run with sh -c once per node with the node's and
// its peers' names and addresses filled in. What the user supplied is
// what it can do (Has): a fault that needs more is refused before the run.
//
// Every command, its output and its exit status go to the node's log
// (LogDir/NAME.log) and to the history: the nemesis takes them
// (TakeCommands) into the completion of the fault operation that ran
// them. Close leaves the cluster as it was found, as far as the commands
// can: nodes killed or stopped are started, paused ones resumed, the
// network healed.
package external
