package main

import (
	"strings"
	"testing"
)

// TestAlterISRTimeoutKeepsMaximalISR replays a finding of a control hunt
// on the correct broker (hunt seed 22, shrunk): a leader whose request to
// admit a follower to the ISR timed out took the silence for a refusal
// and committed alone, with min.insync.replicas=1, records that follower
// lacked; the controller had admitted it, and elected it when the leader
// was fenced, a clean election that lost committed records. The broker
// now asks again and keeps the maximal ISR until the controller answers
// (KIP-497), so the same scenario is valid.
func TestAlterISRTimeoutKeepsMaximalISR(t *testing.T) {
	out, code := runChaos(t, "sim", "--store", t.TempDir(), "--nodes", "5", "--min-insync-replicas", "1",
		"--session-timeout-ms", "5946", "--replica-lag-time-max-ms", "3630", "--replica-lag-max-messages", "2025",
		"--replica-fetch-wait-max-ms", "122", "--concurrency", "2", "--consumers", "2", "--rate", "165",
		"--time-limit", "2.8s", "--request-timeout", "4.281s", "--schedule",
		"kill-majority@46ms+53ms,isolate@113ms+13ms,kill-majority@154ms+70ms,slow-follower@312ms+10ms,isolate@410ms+10ms,"+
			"slow-follower@434ms+43ms,majority-ring@535ms+35ms,isolate@646ms+13ms,slow-follower@675ms+30ms,isolate@788ms+19ms,"+
			"majority-ring@861ms+37ms,majority-ring@933ms+10ms,isolate@1.003s+11ms,kill-majority@1.045s+32ms,isolate@1.199s+34ms,"+
			"slow-follower@1.344s+22ms,slow-follower@1.388s+12ms,isolate@1.448s+12ms,majority-ring@1.482s+10ms,kill-majority@1.595s+23ms,"+
			"kill-majority@1.642s+10ms,slow-follower@1.679s+10ms,kill-majority@1.745s+21ms,isolate@1.781s+11ms,slow-follower@1.823s+38ms,"+
			"isolate@1.973s+54ms,slow-follower@2.047s+70ms,isolate@2.157s+10ms,kill-majority@2.24s+50ms,kill-majority@2.305s+36ms,"+
			"kill-majority@2.383s+29ms", "--seed", "4379419852776049382")
	if code != 0 || !strings.Contains(out, "verdict: VALID") {
		t.Fatalf("exit %d; want a valid run:\n%s", code, out)
	}
}
