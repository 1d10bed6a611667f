// Package results keeps what tests leave behind: the store, with one
// directory per run (store/<test>/<timestamp>/: history.jsonl, test.json,
// results.json, node logs), a store/latest link to the newest, and atomic
// writes so that a reader never sees half a file. The HTML report and
// campaign index renderers will live here too.
package results
