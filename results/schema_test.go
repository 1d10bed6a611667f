package results

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
)

// The files in testdata/stored were written by chaos run and chaos
// campaign (before the store owned its schema) and are kept as they were.
// Each must still decode into the store's types with no field left over,
// and the schemas the store owns must encode back byte for byte as Run's
// WriteJSON would write them: a field renamed, dropped or retyped in the
// store's types fails here instead of silently changing what is stored.

// decodeStrict decodes a stored file into T, refusing fields T lacks.
func decodeStrict[T any](t *testing.T, name string) (T, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "stored", name))
	if err != nil {
		t.Fatal(err)
	}
	var v T
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v, data
}

// roundTrip checks that a stored file decodes strictly into T and encodes
// back to the same bytes, the way Run.WriteJSON writes it.
func roundTrip[T any](t *testing.T, name string) T {
	t.Helper()
	v, data := decodeStrict[T](t, name)
	dir := t.TempDir()
	r := &Run{Store: dir, Test: "t", Dir: dir}
	if err := r.WriteJSON(name, v); err != nil {
		t.Fatal(err)
	}
	again, err := os.ReadFile(r.Path(name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, data) {
		t.Errorf("%s does not encode back as stored:\n%s", name, firstDiff(data, again))
	}
	return v
}

// firstDiff shows where two encodings part.
func firstDiff(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	from := max(i-120, 0)
	return "stored:  ..." + string(want[from:min(i+120, len(want))]) + "\nwritten: ..." + string(got[from:min(i+120, len(got))])
}

func TestTestJSONSchema(t *testing.T) {
	healthy := roundTrip[TestConfig](t, "test-healthy.json")
	if healthy.Schedule != nil || healthy.Convergence == nil || !healthy.Convergence.Converged || healthy.Workload.Acks != -1 || len(healthy.Workload.Bootstrap) != 3 {
		t.Errorf("test-healthy.json read as %+v", healthy)
	}
	faults := roundTrip[TestConfig](t, "test-faults.json")
	if len(faults.Schedule) == 0 || faults.Schedule[0].Fault == "" || faults.Schedule[0].End <= faults.Schedule[0].Start || len(faults.Nemesis) != 2 {
		t.Errorf("test-faults.json read as %+v", faults)
	}
	if c := faults.CheckerConfig(); c.Acks != -1 || c.MinInsyncReplicas != 2 || c.Election != "clean" || len(c.Faults) != 2 {
		t.Errorf("checker config %+v", c)
	}
}

// results.json's schema is the checker's (checker.Results): the store
// only reads it back, so it must keep reading what was stored.
func TestResultsJSONReads(t *testing.T) {
	res, _ := decodeStrict[checker.Results](t, "results.json")
	if len(res.Results) == 0 || res.Config.Acks != -1 {
		t.Errorf("results.json read as %+v", res)
	}
	if _, err := ReadResults(filepath.Join("testdata", "stored", "results.json")); err != nil {
		t.Fatal(err)
	}
}

func TestCampaignJSONSchema(t *testing.T) {
	matrix := roundTrip[Campaign](t, "campaign-matrix.json")
	if matrix.Format != CampaignFormat || len(matrix.Spec.Acks) != 2 || matrix.Spec.TimeLimit != Duration(6*time.Second) || matrix.Status != "complete" ||
		len(matrix.Cells) != 4 || matrix.Cells[0].Name == "" || len(matrix.Cells[0].Args) == 0 || len(matrix.Cells[0].Permitted) == 0 ||
		len(matrix.Cells[0].Runs) != 1 || matrix.Cells[0].Runs[0].Dir == "" || matrix.Cells[0].Runs[0].Sends == nil || matrix.Cells[0].Summary.Availability == nil {
		t.Errorf("campaign-matrix.json read as %+v", matrix)
	}
	cells := roundTrip[Campaign](t, "campaign-cells.json")
	if len(cells.Spec.Cells) != 2 || cells.Spec.Cells[0].Acks != -1 || cells.Spec.Cells[1].Election != "unclean" || cells.Cells[0].Refused == "" ||
		cells.Cells[0].Runs[0].Error == "" || cells.Cells[1].Model.Acks != 0 {
		t.Errorf("campaign-cells.json read as %+v", cells)
	}
	if _, err := ReadCampaign(filepath.Join("testdata", "stored", "campaign-cells.json")); err != nil {
		t.Fatal(err)
	}
	// A detection campaign (chaos campaign --spec with cells that plant a
	// bug, in simulation): the detection matrix, a cell's bugs and run
	// args, a run's first detection.
	det := roundTrip[Campaign](t, "campaign-detection.json")
	if len(det.Detection) != 2 || len(det.Detection[0].Bugs) != 1 || det.Detection[0].Bugs[0].Node != "broker" || det.Detection[0].Caught == 0 ||
		det.Detection[0].MedianTime == nil || det.Detection[0].MedianOps == nil || len(det.Detection[0].Anomalies) == 0 || det.Detection[1].Bugs != nil ||
		len(det.Spec.Cells[0].Bugs) != 1 || len(det.Spec.Cells[0].RunArgs) != 2 || len(det.Cells[0].Bugs) != 1 || len(det.Cells[0].RunArgs) != 2 ||
		det.Cells[0].Runs[0].Detection == nil || det.Cells[0].Runs[0].Detection.Ops == 0 || det.Cells[1].Runs[0].Detection != nil {
		t.Errorf("campaign-detection.json read as %+v", det)
	}
}

// A hunt that found a planted bug and shrank it (chaos hunt --bug
// read-past-hw --seed 1 --shrink-runs 5).
func TestHuntJSONSchema(t *testing.T) {
	h := roundTrip[Hunt](t, "hunt.json")
	if h.Format != HuntFormat || h.Seed != 1 || h.Status != "complete" || h.ExitCode == nil || *h.ExitCode != 1 || len(h.Command) == 0 ||
		h.Options.ShrinkRuns != 5 || len(h.Options.Bugs) != 1 || len(h.Options.Kinds) == 0 || h.Options.Config.Acks != -1 ||
		len(h.Growth) == 0 || h.Growth[len(h.Growth)-1].Coverage != h.Coverage || len(h.Findings) != 1 || h.Unjudged == nil {
		t.Errorf("hunt.json read as %+v", h)
	}
	f := h.Findings[0]
	if f.Run == 0 || f.Seed == 0 || f.Elapsed == 0 || f.Dir == "" || f.Replay == "" || f.Scenario == "" || len(f.Anomalies) == 0 ||
		f.Shrunk == nil || f.Shrunk.Dir == "" || f.Shrunk.Runs != 5 || f.Shrunk.Before.Windows == 0 || f.Shrunk.After.TimeLimit == 0 {
		t.Errorf("its finding read as %+v (shrunk %+v)", f, f.Shrunk)
	}
}
