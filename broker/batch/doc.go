// Package batch reads and stamps Kafka v2 record batch headers.
//
// The broker never decodes individual records: a produced batch is validated,
// given its base offset and the leader epoch, and stored as the client sent it.
// Followers copy batches byte for byte. The CRC (CRC-32C) covers the bytes from
// the attributes field to the end, so stamping the base offset and the leader
// epoch does not change it.
package batch
