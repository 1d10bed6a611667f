// Package node is one node of a cluster as its command describes it:
// chaos broker's and chaos controller's flags. It checks each value naming
// its flag (package cli's style), builds the configurations of core,
// storage and controller from them, and gives each process the planted
// bugs that live in it, saying which of those asked for it ignores;
// package server runs the node (RunBroker, RunController).
//
// The same checks serve the tester's commands that start nodes with these
// settings (chaos run, chaos cluster up), so that a value the nodes would
// refuse is refused before a cluster starts, in the same words. The
// package runs nothing itself, so the tester takes the checks without the
// broker's driver.
package node
