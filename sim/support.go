package sim

import (
	"errors"
	"fmt"
	"strings"

	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/runner"
)

// Simulated says why fault cannot run in simulation, or nil if it can.
func Simulated(fault string) error {
	f, ok := nemesis.Lookup(fault)
	if !ok {
		return fmt.Errorf("%q is not a fault; known: %s", fault, strings.Join(nemesis.Names(), ", "))
	}
	for _, p := range f.Parts {
		if err := Simulated(p.Name); err != nil {
			return err
		}
	}
	if f.Parts == nil && !f.Simulated {
		return fmt.Errorf("fault %q has no model in the simulation yet (its registry entry is not marked Simulated)", f.Name)
	}
	return nil
}

// Validate refuses a spec the simulation cannot run, with the reasons:
// what runner.Spec.Validate refuses, what has no meaning in a simulated
// cluster (ports, a binary, another runtime), and faults it cannot model.
func Validate(spec runner.Spec) error {
	var errs []error
	if spec.Runtime != runner.RuntimeSim && spec.Runtime != "" {
		errs = append(errs, fmt.Errorf("runtime: %q; a simulation runs in the %s runtime", spec.Runtime, runner.RuntimeSim))
	}
	spec.Runtime = runner.RuntimeSim
	if err := spec.Validate(); err != nil {
		errs = append(errs, err)
	}
	if spec.BasePort != 0 {
		errs = append(errs, fmt.Errorf("base_port: %d; the simulated cluster listens on no port", spec.BasePort))
	}
	if spec.Binary != "" {
		errs = append(errs, fmt.Errorf("binary: %q; the simulated cluster runs no process", spec.Binary))
	}
	// The faults a given schedule runs are its windows' kinds.
	for _, f := range spec.Normalized().Faults {
		if _, known := nemesis.Lookup(f); !known {
			continue // spec.Validate said so
		}
		if err := Simulated(f); err != nil {
			errs = append(errs, fmt.Errorf("faults: %w", err))
		}
	}
	return errors.Join(errs...)
}
