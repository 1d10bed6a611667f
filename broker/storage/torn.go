package storage

import "github.com/chaos-isr/chaos/broker/batch"

// tear zeroes, in place, the records of every whole batch in b and keeps
// their headers: what a crash leaves of a write whose first block (the
// header, with its offsets, length and CRC) reached the disk while the rest
// did not, a torn write. Such a batch fails its CRC.
//
// Only planted bug recovery-keeps-torn-tail asks for torn writes: its
// recovery keeps what the crash tore, so with --lose-unsynced a crash tears
// the unsynced batches instead of losing them cleanly, and the bug has
// something to serve. Without the bug the crash model is unchanged.
func tear(b []byte) {
	batch.Walk(b, func(_ batch.Header, raw []byte) bool {
		clear(raw[batch.HeaderSize:])
		return true
	})
}
