// Package serve serves a result store over HTTP for chaos serve: the store
// page, every run's report and every campaign's index (rendered on first
// visit when missing), histories and node logs as text. It serves nothing
// outside the store: ".." is refused, symlinks are followed only while
// they stay inside, and only requests addressed to localhost or a loopback
// address are answered (a page that rebinds its own name to 127.0.0.1
// cannot read the store). New checks chaos serve's flags, which must name
// a loopback address.
package serve
