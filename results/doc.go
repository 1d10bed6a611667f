// Package results is the result store: what tests leave behind, where it
// lies and in what form.
//
// The store has one directory per run (store/<test>/<timestamp>/:
// history.jsonl, test.json, results.json, node logs, report.html), a
// store/latest and a store/<test>/latest link to the newest, one directory
// per campaign (store/campaigns/<timestamp>/: campaign.json, index.html,
// logs/) with store/campaigns/latest, and one per hunt
// (store/hunts/<timestamp>/: hunt.json, hunt.html) with store/hunts/latest.
// Files are written atomically, so that a reader never sees half of one
// (NewRun, WriteJSON, MarkLatest, Relink, WriteFileAtomic); ListStore lists
// what a store holds, and FindHistory finds the history of a run
// directory, saying, for a path that is not one, which runs it could have
// meant (RunsHint).
//
// The package owns the schema of what it stores: test.json is
// TestConfig, campaign.json is Campaign and hunt.json is Hunt, all defined
// here with types of their own, so that a change in the packages that run
// a test (workload, nemesis) cannot silently change a stored file; the
// runner converts its types at the boundary. results.json is the
// checker's (checker.Results), read here with ReadResults. Stored files of
// real runs in testdata/stored pin the schema: they must decode without a
// field left over and encode back byte for byte.
//
// The HTML pages rendered from a store are package results/report's.
package results
