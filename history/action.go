package history

// Action is what the tester does to a node of the cluster or to its
// links. It is one set, spelled here once, for every place that names
// one: the faults' needs (package nemesis), the external runtime's fault
// commands (--ACTION-cmd) and the commands a history records
// (Command.Action), chaos cluster's control API, and the report's list
// of commands. The runtimes' interfaces (cluster.Runtime, Network) are
// its methods.
type Action string

// The actions.
const (
	ActKill      Action = "kill"      // kill -9 a node
	ActStart     Action = "start"     // start a killed or stopped node again
	ActStop      Action = "stop"      // stop a node gracefully
	ActPause     Action = "pause"     // pause a node
	ActResume    Action = "resume"    // resume a paused node
	ActPartition Action = "partition" // cut links between nodes
	ActSlow      Action = "slow"      // delay the links between two nodes
	ActHeal      Action = "heal"      // undo every network fault
	ActOneWay    Action = "one-way"   // drop one direction of a link
	ActDelay     Action = "delay"     // delay every link
	ActDrop      Action = "drop"      // reset connections at random
	ActClock     Action = "clock"     // set a node's clock wrong, or right
	ActDisk      Action = "disk"      // damage a down node's data directory, or restore an old copy
)

// CommandActions are the actions a command can apply (an external
// cluster's fault commands, chaos cluster's control API), in the order
// chaos run documents its --ACTION-cmd flags.
func CommandActions() []Action {
	return []Action{ActKill, ActStart, ActStop, ActPause, ActResume, ActPartition, ActSlow, ActHeal}
}

// Strings are actions as strings, for the places that keep them so
// (flags, JSON keys).
func Strings(as []Action) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = string(a)
	}
	return out
}
