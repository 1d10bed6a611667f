package history

import "fmt"

// Pairs maps each invoke's position in ops to the position of its
// completion (the next ok, fail or info of the same process), or -1 if the
// history ended first. Completions map to their invoke. It checks the
// Jepsen rule that a process has one operation outstanding at a time.
func Pairs(ops []Op) ([]int, error) {
	pair := make([]int, len(ops))
	open := map[int]int{}
	for i, op := range ops {
		pair[i] = -1
		if op.Type == Invoke {
			if j, busy := open[op.Process]; busy {
				return nil, fmt.Errorf("op %d: process %d invoked %s while op %d is still open", op.Index, op.Process, op.F, ops[j].Index)
			}
			open[op.Process] = i
			continue
		}
		j, ok := open[op.Process]
		if !ok {
			return nil, fmt.Errorf("op %d: process %d completed %s without an invoke", op.Index, op.Process, op.F)
		}
		if ops[j].F != op.F {
			return nil, fmt.Errorf("op %d: completes %s but process %d invoked %s (op %d)", op.Index, op.F, op.Process, ops[j].F, ops[j].Index)
		}
		pair[i], pair[j] = j, i
		delete(open, op.Process)
	}
	return pair, nil
}
