// Package shard splits a plan's runs among machines: "--shard K/N" runs
// only the K-th of N slices. Every machine plans every run (the same
// campaign or sweep, from the same seed) and keeps those of its slice, so
// the shards need not talk to each other, and together they run each
// planned run exactly once.
//
// A run's slice comes from a stable hash of the key that names the run
// (a campaign's "<cell name>/<run number>", a sweep's seed), never from
// its position in the plan: adding a cell to a campaign or seeds to a
// sweep moves no other run to another shard, so a shard's runs, their
// seeds and their results stay comparable from one day to the next. The
// price is balance: slices hold about, not exactly, the same number of
// runs.
package shard

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Shard is the K-th of N slices, K from 1. The zero Shard is the whole
// plan.
type Shard struct{ K, N int }

// Parse reads "K/N", 1 <= K <= N. K may be written I+1, for schedulers
// that number their tasks from 0 and run images without a shell to add
// one (a Kubernetes Indexed Job's JOB_COMPLETION_INDEX, expanded into the
// arguments: "$(JOB_COMPLETION_INDEX)+1/4"). An empty string is the whole
// plan.
func Parse(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	ks, ns, ok := strings.Cut(s, "/")
	var k int
	var kerr error
	if i, plusOne := strings.CutSuffix(strings.TrimSpace(ks), "+1"); plusOne {
		k, kerr = strconv.Atoi(i)
		k++
	} else {
		k, kerr = strconv.Atoi(i)
	}
	n, nerr := strconv.Atoi(strings.TrimSpace(ns))
	switch {
	case !ok || kerr != nil || nerr != nil:
		return Shard{}, errors.New("not K/N")
	case n < 1 || k < 1 || k > n:
		return Shard{}, errors.New("K must be from 1 to N")
	}
	return Shard{K: k, N: n}, nil
}

// Whole reports whether s is the whole plan (no sharding).
func (s Shard) Whole() bool { return s.N == 0 }

func (s Shard) String() string {
	if s.Whole() {
		return "all"
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// Has reports whether the run named key belongs to s.
func (s Shard) Has(key string) bool { return s.Whole() || Of(key, s.N) == s.K }

// Of is the slice, from 1 to n, of the run named key.
func Of(key string, n int) int { return int(Hash(key)%uint64(n)) + 1 }

// Hash is a stable 64-bit hash of a string, the same on every machine and
// in every version: FNV-1a, mixed with splitmix64's finalizer (FNV alone
// leaves keys that differ in their last character sharing their top
// half). Campaign run seeds derive from it too.
func Hash(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
