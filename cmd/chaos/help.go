package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/cluster/external"
)

// Grouped help. A command with many flags prints them in groups ("Cluster
// flags:", "Workload flags:", ...), as kubectl and gh do, rather than
// fifty in one block. A flag's group is a pflag annotation (helpGroupKey)
// that groupFlags sets from the tables below once the command's flags are
// registered, and the command lists its groups in order in its own
// annotations (helpGroupsKey); the usage template prints them
// (flagSections), and so does the command reference (docs/commands.md).
// TestFlagGroups fails on a visible flag of a grouped command that no
// group names, and on a command with many flags and no groups: a flag
// added without a group is caught at once.

const (
	helpGroupKey  = "chaos_help_group"  // on a flag: the title of its group
	helpGroupsKey = "chaos_help_groups" // on a command: its groups' titles in order, one a line
)

// flagGroup is one group of a command's help: its title ("Cluster
// flags") and its flags' names, in the order help prints them.
type flagGroup struct {
	title string
	flags []string
}

func group(title string, names ...string) flagGroup { return flagGroup{title, names} }

// externalCmdFlags are the external runtime's command templates, one flag
// per action (--kill-cmd, ...), in the runtime's order.
func externalCmdFlags() []string {
	var names []string
	for _, a := range external.Actions() {
		names = append(names, a+"-cmd")
	}
	return names
}

// The groups chaos run and chaos sim share: what they set up, drive and
// break. chaos sim hides --runtime and --base-port, which help then
// leaves out.
var (
	clusterGroup = group("Cluster flags", "nodes", "runtime", "base-port", "partitions", "replication-factor",
		"min-insync-replicas", "election", "bug")
	brokerGroup = group("Broker flags", "replica-lag-time-max-ms", "replica-lag-max-messages",
		"replica-fetch-wait-max-ms", "heartbeat-interval-ms", "session-timeout-ms", "fsync", "lose-unsynced",
		"no-auto-create-topics")
	workloadGroup = group("Workload flags", "acks", "time-limit", "seed", "concurrency", "consumers", "rate",
		"retries", "idempotent", "max-in-flight", "workload", "sub-via", "request-timeout", "converge-timeout", "liveness-bound", "monitor-interval")
	outputGroup = group("Output flags", "name", "store", "quiet")
)

func runGroups() []flagGroup {
	return []flagGroup{
		clusterGroup, brokerGroup, workloadGroup,
		group("Fault flags", "nemesis", "nemesis-interval", "nemesis-overlap", "allow-partial-schedule", "schedule"),
		externalGroup(),
		group("Output flags", append(slices.Clone(outputGroup.flags), "fail-on")...),
	}
}

func simGroups() []flagGroup {
	return []flagGroup{
		clusterGroup, brokerGroup, workloadGroup,
		group("Fault flags", "nemesis", "nemesis-interval", "nemesis-overlap", "allow-partial-schedule", "schedule"),
		group("Sweep flags", "seeds", "runs", "parallel", "keep-valid", "shard"),
		group("Search flags (--shrink, --from)", "shrink", "shrink-runs", "from"),
		outputGroup,
	}
}

func campaignGroups() []flagGroup {
	return []flagGroup{
		group("Matrix flags", "preset", "spec", "acks", "min-insync-replicas", "election", "nemesis"),
		group("Run flags", "runs", "time-limit", "nemesis-interval", "seed", "runtime", "parallel", "in-process", "shard"),
		group("Output flags", "store", "junit", "dry-run", "fail-on"),
	}
}

func clusterUpGroups() []flagGroup {
	return []flagGroup{
		group("Cluster flags", "nodes", "runtime", "base-port", "controller-port", "data", "network-faults", "bug"),
		brokerGroup,
		group("Topic flags (the controller's defaults for new topics)", "partitions", "replication-factor", "min-insync-replicas", "election"),
	}
}

func brokerGroups() []flagGroup {
	b := brokerGroup
	b.flags = b.flags[:0:0]
	for _, n := range brokerGroup.flags {
		if n != "session-timeout-ms" { // the controller's
			b.flags = append(b.flags, n)
		}
	}
	return []flagGroup{
		group("Node flags", "id", "cluster-id", "listen", "advertise", "controller", "data", "peer-addr", "bug"),
		b,
		group("Coordinator flags", "group-initial-rebalance-delay-ms", "group-min-session-timeout-ms", "offsets-topic-partitions",
			"transaction-topic-partitions", "transaction-max-timeout-ms"),
	}
}

func checkGroups() []flagGroup {
	return []flagGroup{
		group("Configuration flags (what the guarantee model assumes)", "acks", "min-insync-replicas", "election", "replication-factor",
			"faults", "lose-unsynced", "fsync", "client-retries", "idempotent", "max-in-flight"),
		group("Checker flags", "linearizable-timeout", "skip-linearizability", "liveness-bound"),
		group("Output flags", "out", "fail-on"),
	}
}

// externalGroup is the external runtime's flags, as chaos run and chaos
// hunt take them.
func externalGroup() flagGroup {
	return group("External runtime flags (with --runtime external)", append([]string{"bootstrap", "cluster-file", "topic", "node",
		"controller-node", "combined-controllers", "allow-weakened-faults"}, append(externalCmdFlags(), "cmd-timeout", "check-commands")...)...)
}

func huntGroups() []flagGroup {
	return []flagGroup{
		group("Search flags", "runs", "time", "parallel", "seed", "shard", "keep-going", "no-feedback", "shrink-runs"),
		group("Scenario flags", "runtime", "draw-config", "acks", "min-insync-replicas", "election", "nemesis", "bug", "workload", "sub-via"),
		externalGroup(),
		group("Output flags", "store", "quiet"),
	}
}

// groupFlags gives each flag of cmd named in groups its group, and cmd
// its groups in order, each with its flags in order. A name that is not a
// flag of cmd, or a flag in two groups, is a mistake in the tables above:
// it panics, so that the first test to build the command tree says so.
func groupFlags(cmd *cobra.Command, groups []flagGroup) {
	var lines []string
	for _, g := range groups {
		for _, name := range g.flags {
			f := cmd.Flags().Lookup(name)
			if f == nil {
				panic(fmt.Sprintf("help group %q of %s names --%s, which is not one of its flags", g.title, cmd.Name(), name))
			}
			if old := f.Annotations[helpGroupKey]; len(old) > 0 {
				panic(fmt.Sprintf("--%s of %s is in two help groups, %q and %q", name, cmd.Name(), old[0], g.title))
			}
			_ = cmd.Flags().SetAnnotation(name, helpGroupKey, []string{g.title})
		}
		lines = append(lines, g.title+"\t"+strings.Join(g.flags, " "))
	}
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[helpGroupsKey] = strings.Join(lines, "\n")
}

// flagSection is one group of a command's flags, as help prints it.
type flagSection struct {
	Title string // "Flags" for the flags of no group (--help; all of them for a command without groups)
	Flags *pflag.FlagSet
}

// flagSections are cmd's visible local flags by group, in the groups'
// order and each group's flags in its table's order, then those of no
// group.
func flagSections(cmd *cobra.Command) []flagSection {
	local := cmd.LocalFlags()
	var sections []flagSection
	if groups := cmd.Annotations[helpGroupsKey]; groups != "" {
		for _, line := range strings.Split(groups, "\n") {
			title, names, _ := strings.Cut(line, "\t")
			fs := pflag.NewFlagSet(title, pflag.ContinueOnError)
			fs.SortFlags = false
			for _, name := range strings.Fields(names) {
				if f := local.Lookup(name); f != nil {
					fs.AddFlag(f)
				}
			}
			if fs.HasAvailableFlags() {
				sections = append(sections, flagSection{title, fs})
			}
		}
	}
	rest := pflag.NewFlagSet("", pflag.ContinueOnError)
	local.VisitAll(func(f *pflag.Flag) {
		if len(f.Annotations[helpGroupKey]) == 0 {
			rest.AddFlag(f)
		}
	})
	if rest.HasAvailableFlags() {
		sections = append(sections, flagSection{"Flags", rest})
	}
	return sections
}

// usageFlags is what the usage template prints in place of cobra's one
// "Flags:" block: a block per group.
func usageFlags(cmd *cobra.Command) string {
	var b strings.Builder
	for _, s := range flagSections(cmd) {
		fmt.Fprintf(&b, "\n\n%s:\n%s", s.Title, strings.TrimRight(s.Flags.FlagUsages(), " \t\n"))
	}
	return b.String()
}

// cobraFlagsBlock is the part of cobra's usage template that prints a
// command's local flags in one block; groupedUsage replaces it.
const cobraFlagsBlock = "\n\nFlags:\n{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}"

func init() { cobra.AddTemplateFunc("usageFlags", usageFlags) }

// groupedUsage is cobra's usage template (given) with the flags in
// groups. It panics if cobra's template no longer has the block it
// replaces (a cobra upgrade): TestFlagGroups builds the tree and says so.
func groupedUsage(template string) string {
	if !strings.Contains(template, cobraFlagsBlock) {
		panic("cobra's usage template has no local flags block to group: update cobraFlagsBlock (cmd/chaos/help.go)")
	}
	return strings.Replace(template, cobraFlagsBlock, "{{usageFlags .}}", 1)
}
