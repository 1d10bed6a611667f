// Package gcpace paces the garbage collector of a process whose live heap
// grows for as long as it runs while nearly all it allocates dies at once:
// a broker's log index (an entry for each batch it holds), a judge's index
// of a history. Go collects when the heap has grown by GOGC percent of the
// live heap, so the garbage such a process holds grows with its index,
// and its peak with it: a broker collecting at 5 times its live heap stood
// at 340 MB an hour into the default test, of an index of about 100 MB.
// The pacer keeps the garbage near a fixed amount instead, once the live
// heap is large enough that GOGC percent of it is more.
//
// The formula (For) is shared by the tester's judges and simulations
// (package runner, which also holds a memory limit while a judge runs).
package gcpace
