// Package heapmeter measures the Go heap for the tests that bound how
// memory grows with a history (the checkers', a simulation's, the
// report's): the live heap after a collection, and its highest while
// something runs. The heap is the live objects' bytes
// (/memory/classes/heap/objects:bytes), not what the runtime has
// reserved, so the collector's headroom is not counted as kept.
package heapmeter
