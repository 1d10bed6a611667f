// Package cluster runs a chaos cluster (a controller and brokers) as local
// child processes on 127.0.0.1: the "local" runtime. It starts, stops,
// kills, pauses, resumes and restarts nodes by id, and makes sure no child
// outlives the process that started it (PR_SET_PDEATHSIG, plus an explicit
// Close on every exit path).
package cluster
