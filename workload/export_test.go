package workload

// What the tests of package workload_test (which may import the
// workloads, as this package may not) need of the tester's own batch
// codec, for their cluster in memory.

// DecodeBatches is decodeBatches.
var DecodeBatches = decodeBatches

// StampedBatch is a batch of values whose first record is at offset base.
func StampedBatch(base int64, values ...[]byte) []byte { return stamp(encodeBatch(0, values...), base) }
