// Package offheap holds a judge's largest tables in a file instead of the
// Go heap: an arena of memory mapped from a file that is unlinked as soon
// as it is made. A history's index grows with the history (an entry for
// each operation, value and read: about 40 bytes a line), so a judge held
// in the heap needs memory in proportion to the run, and a day's soak
// more than a CI runner has. Mapped from a file, the same tables are page
// cache: the kernel keeps them in memory while it has room and writes
// them out and reads them back when it has not, so a long history is
// judged in what the machine has, at the cost of disk I/O only when
// memory is short.
//
// A process's RSS counts the pages it has mapped, page cache or not, so
// an arena gives back what it mapped before each time it has grown by
// another 64 MB, and Release gives back all of it, for a caller done with
// a pass over its tables: the pages stay in the file (and the page cache),
// and what is touched again is mapped again.
//
// What an arena holds must hold no pointer: the collector does not scan
// it (Make refuses such a type). An arena's memory is valid until Close.
// A nil *Arena allocates in the heap, as does an arena whose file could
// not grow (a full disk), one in a file system of memory (tmpfs: its
// pages could only go to swap) and one off Linux (space is reserved with
// fallocate, so that a full disk is an error and not a SIGBUS): the
// caller's tables work either way, and Err says why. A file system that
// copies on write (btrfs) does not reserve room for a page written again
// by fallocate, so there a full disk can still end a judge.
package offheap
