// Package cluster runs a chaos cluster (a controller and brokers) as local
// child processes on 127.0.0.1: the "local" runtime. It starts, stops,
// kills, pauses, resumes and restarts nodes by id, and makes sure no child
// outlives the process that started it (PR_SET_PDEATHSIG, plus an explicit
// Close on every exit path). A node counts as started when its own log
// says it listens, never because its port answers: another process may
// hold that port. What a killed tester leaves behind is found by its
// owner (pid and start time): the temporary data directories of "cluster
// up" here, the containers of cluster/docker there.
package cluster
