package bug

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRegistry: every bug is described in full, under a unique lower-case
// name, in a node that exists, and fits in a Set.
func TestRegistry(t *testing.T) {
	if count > 64 {
		t.Fatalf("%d bugs do not fit in a Set", count)
	}
	name := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	seen := map[string]bool{}
	for i, in := range All() {
		if in.Bug != Bug(i) {
			t.Errorf("entry %d describes bug %d", i, in.Bug)
		}
		if !name.MatchString(in.Name) || seen[in.Name] {
			t.Errorf("bug %d: name %q is not a unique lower-case-with-dashes name", i, in.Name)
		}
		seen[in.Name] = true
		if in.Node != Broker && in.Node != Controller && in.Node != Storage {
			t.Errorf("%s: node %q", in.Name, in.Node)
		}
		if in.Breaks == "" || in.Mirrors == "" || in.Why == "" || in.Scenario == "" {
			t.Errorf("%s: a description field is empty: %+v", in.Name, in)
		}
	}
	// The eleven of issue 13 at least.
	for _, n := range []string{"ack-before-replicate", "hw-ignores-isr", "isr-early-rejoin", "read-past-hw", "unclean-when-clean",
		"truncate-to-hw", "no-follower-truncation", "min-isr-ignored", "isr-shrink-without-controller", "recovery-keeps-torn-tail", "offset-reuse"} {
		if !seen[n] {
			t.Errorf("bug %s missing", n)
		}
	}
}

func TestParse(t *testing.T) {
	for _, in := range All() {
		b, err := Parse(in.Name)
		if err != nil || b != in.Bug || b.String() != in.Name {
			t.Errorf("Parse(%q) = %v, %v", in.Name, b, err)
		}
	}
	_, err := Parse("ack-after-replicate")
	if err == nil || !strings.Contains(err.Error(), `unknown bug "ack-after-replicate"`) || !strings.Contains(err.Error(), "offset-reuse") {
		t.Fatalf("unknown name: %v, want an error listing the known names", err)
	}
}

func TestSet(t *testing.T) {
	var zero Set
	if !zero.Empty() || zero.String() != "" || zero.Has(AckBeforeReplicate) {
		t.Fatalf("zero set %q is not empty", zero)
	}
	s, err := ParseSet([]string{"read-past-hw", "ack-before-replicate", "read-past-hw", "recovery-keeps-torn-tail", "unclean-when-clean"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "ack-before-replicate,read-past-hw,unclean-when-clean,recovery-keeps-torn-tail"; s.String() != want {
		t.Fatalf("set %q, want %q (registry order, no repeats)", s, want)
	}
	if !s.Has(ReadPastHW) || s.Has(HWIgnoresISR) {
		t.Fatalf("Has is wrong for %q", s)
	}
	if got := s.On(Broker); got != Of(AckBeforeReplicate, ReadPastHW) {
		t.Fatalf("broker bugs %q", got)
	}
	if s.On(Controller) != Of(UncleanWhenClean) || s.On(Storage) != Of(RecoveryKeepsTornTail) {
		t.Fatalf("controller %q, storage %q", s.On(Controller), s.On(Storage))
	}
	if err := s.On(Broker).Only(Broker); err != nil {
		t.Fatal(err)
	}
	if err := s.Only(Broker); err == nil || !strings.Contains(err.Error(), "unclean-when-clean lives in the controller") {
		t.Fatalf("Only(broker) of a controller bug: %v", err)
	}
	if err := Set(1 << 63).Only(Broker); err == nil {
		t.Fatal("an unknown bit passed Only")
	}
	if _, err := ParseSet([]string{"nope"}); err == nil {
		t.Fatal("ParseSet took an unknown name")
	}
}

// TestSetJSON: a Set is stored by names, and read back.
func TestSetJSON(t *testing.T) {
	for _, s := range []Set{0, Of(OffsetReuse), Of(AckBeforeReplicate, UncleanWhenClean, RecoveryKeepsTornTail)} {
		b, err := json.Marshal(struct{ Bugs Set }{s})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"Bugs":"` + s.String() + `"}`; string(b) != want {
			t.Fatalf("%s, want %s", b, want)
		}
		var back struct{ Bugs Set }
		if err := json.Unmarshal(b, &back); err != nil || back.Bugs != s {
			t.Fatalf("read back %q (%v), want %q", back.Bugs, err, s)
		}
	}
	var s Set
	if err := json.Unmarshal([]byte(`"read-past-hw,nope"`), &s); err == nil {
		t.Fatal("an unknown name was read")
	}
}

func TestProcess(t *testing.T) {
	got := []Node{Broker.Process(), Controller.Process(), Storage.Process()}
	if !slices.Equal(got, []Node{Broker, Controller, Broker}) {
		t.Fatalf("processes %v", got)
	}
}
