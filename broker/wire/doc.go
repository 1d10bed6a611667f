// Package wire turns bytes on a Kafka connection into kmsg requests and kmsg
// responses back into bytes, for both sides of a connection: the broker serving
// clients, and a follower fetching from its leader.
//
// Every protocol struct comes from github.com/twmb/franz-go/pkg/kmsg. What this
// package adds is the part kmsg leaves to its caller and that real clients
// (franz-go, sarama, librdkafka/kcat) are picky about:
//
//   - Framing with a size limit checked before anything of that size is
//     allocated, so a peer cannot make the broker reserve gigabytes by sending
//     four bytes.
//   - Request header v1/v2 and response header v0/v1, including the one
//     exception Kafka makes: an ApiVersions response always uses header v0,
//     because the client cannot know whether the broker speaks flexible
//     versions until it has read that very response.
//   - The table of API versions the broker supports. It bounds what
//     ParseRequest decodes and is what ApiVersions advertises, so the two
//     cannot drift apart.
//   - The KIP-511 path: an ApiVersions request at a version the broker does not
//     know is answered with a v0 response carrying UNSUPPORTED_VERSION and the
//     ApiVersions range, so the client can retry lower. Any other unsupported
//     request closes the connection, as Kafka does.
//
// Errors are split by what the server should do: ErrUnsupported still comes
// with a parsed header (reply or close, see UnsupportedResponse); ErrTruncated
// and ErrMalformed mean the stream cannot be trusted and the connection should
// close. ParseRequest never panics, whatever the input: a panic inside kmsg is
// recovered and reported as ErrMalformed.
//
// Decoded requests alias the frame they were parsed from (a Produce request's
// record batches are sub-slices of it), so a frame buffer must not be reused
// while its request is still in use.
package wire
