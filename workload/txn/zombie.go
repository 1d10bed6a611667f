package txn

import (
	"fmt"
	"maps"
	"math/rand/v2"

	"github.com/chaos-isr/chaos/workload"
)

// Zombies (the nemesis's pause-producer): a session paused where it
// stands, as a producer process in a long stop-the-world pause, while a
// new process starts in its place with the same transactional id, as a
// deployment restarts a producer it believes dead. The new incarnation's
// InitProducerId bumps the id's epoch, which aborts what the paused one
// had open and fences it. When the window ends the paused one wakes, a
// zombie: it goes on with the transaction it was in, as if nothing had
// happened, and then stops. Its sends and its EndTxn carry the old
// epoch, and every broker must refuse them: a zombie whose writes land
// or whose commit is taken makes a transaction the history records as
// failed visible (aborted-read), or ends the new incarnation's.

// Sessions is how many transactional sessions the workload runs.
func (w *Workload) Sessions() int { return len(w.producers) }

// Zombie pauses session i and has a new process take its place at once,
// and names the paused one.
func (w *Workload) Zombie(i int) (string, error) {
	old := w.producers[i]
	name := fmt.Sprintf("producer %d (process %d)", i, old.process)
	if w.over() || old.done {
		return name, fmt.Errorf("%s is not running", name)
	}
	old.paused, old.zombie = true, true
	process := old.process + old.stride
	next := &producer{w: w, i: i, process: process, stride: old.stride, interval: old.interval,
		rng: rand.New(rand.NewPCG(w.cfg.Seed, uint64(process)+1)), x: workload.NewTxn(old.x.ID, Timeout),
		from: maps.Clone(old.from)}
	next.cl = w.p.NewClient(w.clientOptions(old.x.ID))
	w.producers[i] = next
	if w.zombies == nil {
		w.zombies = map[int][]*producer{}
	}
	w.zombies[i] = append(w.zombies[i], old)
	w.running++
	next.wake()
	// A zombie still paused at the time limit wakes there, to stop.
	env := w.p.Env()
	env.After(max(w.cfg.TimeLimit-env.Now(), 0), old.unpause)
	return name, nil
}

// Wake has the paused sessions of slot i go on, as zombies.
func (w *Workload) Wake(i int) error {
	for _, z := range w.zombies[i] {
		z.unpause()
	}
	return nil
}

// unpause has a paused producer take the step it was held at.
func (pr *producer) unpause() {
	if !pr.paused {
		return
	}
	pr.paused = false
	if next := pr.held; next != nil {
		pr.held = nil
		next()
	}
}

// hold keeps next for when the producer is unpaused, if it is paused.
func (pr *producer) hold(next func()) bool {
	if pr.paused {
		pr.held = next
	}
	return pr.paused
}
