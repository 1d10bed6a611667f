// Package hunt searches for replication bugs without being told where
// they are: chaos hunt. Each run's whole scenario is drawn from its seed,
// swarm-testing style (TigerBeetle's VOPR, Jepsen's combined nemesis):
// which fault kinds and how they overlap, window lengths and quiet
// periods log-uniform from tens of milliseconds to tens of seconds, the
// cluster's size and timeouts, the producers' retries, idempotence and
// pipelining, the consumers and the rate. The configuration under
// judgement (acks, min.insync.replicas, election) is the caller's, or
// drawn too.
//
// A drawn scenario is a runner.Spec like any other, its schedule written
// out window by window, so a finding replays from chaos sim's flags byte
// for byte and shrinks with sim.Shrink. The guarantee model judges every
// drawn combination: a setting it could not judge is never drawn, so a
// correct broker is never found INVALID (docs/detection.md measures it).
//
// The search keeps a corpus of the scenarios that showed the tester
// something new, in the manner of AFL and of Mallory (greybox fuzzing of
// distributed systems): coverage is the set of short sequences of
// abstract events the tester observed through the protocol (leader epoch
// changes, ISR sizes, errors answered, faults in effect, a consumer sent
// back), black-box and so meaningful for any broker, and a new run is
// more often a mutation of a corpus entry than a fresh draw.
package hunt
