// Package intern holds values that repeat across a long history once
// each, by id: a monitor samples each partition several times a second
// for hours, and its ISRs and replica lists are a handful of lists. A
// table that keeps an id in place of the list keeps 4 bytes, not a slice
// and its array.
package intern
