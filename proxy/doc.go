// Package proxy is the local runtime's network fault fabric: a
// fault-injecting TCP proxy on every directed inter-node link, running
// inside the tester process, so that partitions, delays and drops need no
// root and no kernel configuration.
//
// A Link carries the connections node From opens to node To. It listens on
// 127.0.0.1 (From is configured to dial that address instead of To's) and
// forwards to To's real address. On a link, Forward is From's bytes to To
// (requests) and Backward is To's bytes to From (responses). A Fabric holds
// the links of a cluster keyed by (from, to) and phrases the usual
// nemeses over node sets: Partition, Isolate, OneWay, Slow, HealAll.
//
// The faults mimic what packet-level faults (nftables drop rules, netem
// delay) do to an established TCP connection, so that the local and the
// docker runtimes inject the same faults:
//
//   - Block is a blackhole, not a reset. The connection stays open, nothing
//     is delivered, and neither side learns anything: a request sent into
//     it is simply never answered and its sender times out. The proxy keeps
//     reading what the sender writes, up to BufferLimit bytes per
//     connection and direction, and then stops reading, so the sender's
//     kernel buffers fill and its writes block, as they would while TCP
//     retransmits into the void. After Unblock the held bytes are delivered
//     in order, like a stalled TCP stream that recovers. (A reset at the
//     limit would turn a blackhole into a fast failure that dropped packets
//     never cause: Linux retransmits for about 15 minutes before giving up.)
//     End of stream and resets are held back too: a node closing its side
//     during a block is not seen by the peer until the block lifts.
//   - A new connection needs both directions open, as the TCP handshake
//     does. During a block in either direction the proxy still accepts it
//     (the kernel would complete the handshake for the listen backlog
//     anyway) but does not dial the target until both directions are
//     unblocked; meanwhile the client's bytes are held as above. If the
//     client gives up (closes) before then, the connection is dropped
//     without ever dialing, so the target never sees a connection that
//     could not have been established. When the dial fails (the target is
//     down) the client's connection is reset, like a refused connection.
//   - Delay holds every chunk read until d after it was read, then delivers
//     it; reading goes on meanwhile (up to BufferLimit), so order is kept
//     and throughput is bounded by BufferLimit/d, like a TCP window over a
//     long path: a delay line, not a throttle (50 ms each way adds 100 ms
//     to a round trip and still carries about 80 MB/s per connection,
//     where a link that waited out the delay before reading on would carry
//     one 64 KiB read per delay). Changing or clearing a delay applies to
//     bytes already held: Heal releases them at once.
//   - Jitter draws each chunk's delay from d ± j when it is read, from a
//     source seeded by the link's jitter seed and the connection's number,
//     so a seed replays the same draws. A chunk never overtakes the one
//     before it (it waits for it instead), so jitter reorders no bytes of a
//     connection, as it would reorder none of a TCP stream's.
//   - Drop resets the connection (both sides get a TCP RST) with a given
//     probability per chunk delivered. It models loss so heavy that the
//     connection dies, not single lost packets, which TCP would hide.
//
// Every fault applies at once to existing and new connections. Faults
// compose (a Partition adds blocks, it does not remove others); Heal clears
// a link and HealAll the fabric.
package proxy
