package shard

import (
	"fmt"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]Shard{"": {}, "1/1": {1, 1}, "2/4": {2, 4}, " 3 / 3 ": {3, 3}, "0+1/4": {1, 4}, "3+1/4": {4, 4}} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"2": "not K/N", "a/4": "not K/N", "0/4": "K must be from 1 to N", "5/4": "K must be from 1 to N", "1/0": "K must be from 1 to N", "4+1/4": "K must be from 1 to N", "+1/4": "not K/N", "1+2/4": "not K/N"} {
		if _, err := Parse(in); err == nil || err.Error() != want {
			t.Errorf("Parse(%q): %v, want %q", in, err, want)
		}
	}
}

// TestAssignment: every run is in exactly one shard; the shards are of
// about the same size; a run's shard does not change when runs are added
// (so neither does it when cells are); the assignment is the same in
// every version (a changed hash would split one campaign's shards across
// two assignments).
func TestAssignment(t *testing.T) {
	const n = 4
	var keys []string
	for c := range 36 {
		for r := 1; r <= 10; r++ {
			keys = append(keys, fmt.Sprintf("cell%d/%d", c, r))
		}
	}
	sizes := make([]int, n+1)
	for _, k := range keys {
		in := 0
		for i := 1; i <= n; i++ {
			if (Shard{i, n}).Has(k) {
				in++
				sizes[i]++
			}
		}
		if in != 1 {
			t.Fatalf("%s is in %d shards", k, in)
		}
		if !(Shard{}).Has(k) {
			t.Fatalf("the whole plan lacks %s", k)
		}
	}
	for i := 1; i <= n; i++ {
		if sizes[i] < len(keys)/n*3/4 || sizes[i] > len(keys)/n*5/4 {
			t.Errorf("shard %d/%d has %d of %d runs", i, n, sizes[i], len(keys))
		}
	}
	// Pinned: what every shard of every version computes. A changed hash
	// would split the shards of one campaign, run by two versions,
	// across two assignments.
	for key, want := range map[string]int{"acks1_isr1_clean_kill/1": 3, "acks1_isr1_clean_kill/2": 4, "42": 3} {
		if got := Of(key, 4); got != want {
			t.Errorf("%s is in shard %d of 4, was %d", key, got, want)
		}
	}
	if h := Hash("42"); h != 11828931283358464770 {
		t.Errorf("Hash(\"42\") = %d", h)
	}
}
