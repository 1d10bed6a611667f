package runner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/workload"
	"github.com/chaos-isr/chaos/workload/queue"
	"github.com/chaos-isr/chaos/workload/txn"
)

// The workloads a run can drive, by --workload: the one place that lists
// them (a new one lives in a package of its own under workload/ and is
// added here; docs/architecture.md says how).
var workloads = []workload.Kind{queue.Kind, txn.Kind}

// DefaultWorkload is the workload of a spec that names none.
const DefaultWorkload = "queue"

// Workloads are the workloads a run can drive.
func Workloads() []workload.Kind { return slices.Clone(workloads) }

// WorkloadDocs names each workload with what it does, for --workload's
// help.
func WorkloadDocs() string {
	var out []string
	for _, k := range workloads {
		out = append(out, k.Name+" ("+k.Doc+")")
	}
	return strings.Join(out, "; ")
}

// WorkloadKind is the workload name names ("" is queue), or why there is
// none.
func WorkloadKind(name string) (workload.Kind, error) {
	if name == "" {
		name = DefaultWorkload
	}
	var names []string
	for _, k := range workloads {
		if k.Name == name {
			return k, nil
		}
		names = append(names, k.Name)
	}
	return workload.Kind{}, cli.Error("workload", name, "not a workload", strings.Join(names, ", ")+cli.DidYouMean(name, names))
}

// NewWorkload is the workload cfg names.
func NewWorkload(cfg workload.Config) (workload.Workload, error) {
	k, err := WorkloadKind(cfg.Name)
	if err != nil {
		return nil, err
	}
	w, err := k.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("workload %s: %w", k.Name, err)
	}
	return w, nil
}
