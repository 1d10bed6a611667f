// Package control lets another process inject faults into a cluster that
// "chaos cluster up" runs in the foreground. The cluster's processes (or
// containers) and its network proxies belong to that one process: only it
// can restart a node it killed, pause a child it started or cut a link
// through its proxies. So it serves a small HTTP API on a unix socket in
// its data directory (DATA/control.sock), and the "chaos cluster kill,
// stop, start, pause, resume, partition, heal" commands, run from another
// shell or by a tester's fault commands, ask it. A unix socket, not a TCP
// port: it needs no port of its own, and only users who may write the data
// directory can reach it.
package control
