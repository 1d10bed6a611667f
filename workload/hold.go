package workload

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Held requests (the nemesis's delay-client): a request a client sends to
// a held broker is not lost but late. The client hears nothing and times
// out, as it would behind a congested or stalled path, and the request
// reaches the broker a fixed delay after it was sent, on a connection of
// its own, whatever the client did meanwhile: its retries, once the hold
// is lifted, arrive first. That is the message that outlives its timeout
// of KAFKA-17754, where a late EndTxn decided the producer's next
// transaction. The answer to a late request goes nowhere.

// Holds are the brokers whose requests the workload's clients hold. Only
// the machine's loop touches it.
type Holds struct {
	held map[int32]bool
}

// holds says whether requests to broker id are held now.
func (h *Holds) holds(id int32) bool { return h != nil && h.held[id] }

// hold sends req to the broker at addr twice the client's timeout late,
// so that the client has given up, asked again and moved on by the time
// it arrives, and tells done of a timeout, as the client's wire would (at
// once, for an acks=0 produce, which no answer follows).
func (c *Client) hold(addr string, req kmsg.Request, done func(kmsg.Response, error)) {
	env, opts := c.env, c.opts
	env.After(2*opts.Timeout, func() {
		w := env.NewWire(opts)
		w.CallAddr(addr, req, func(kmsg.Response, error) { w.Close() })
	})
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		done(nil, nil)
		return
	}
	c.after(opts.Timeout, func() { done(nil, fmt.Errorf("read %s: i/o timeout", addr)) })
}

// Hold has every request the workload's clients send to broker id from
// now on held (delay-client), until Release, and says for how long.
func (p *Phases) Hold(id int32) (string, error) {
	if p.holds.held == nil {
		p.holds.held = map[int32]bool{}
	}
	p.holds.held[id] = true
	return fmt.Sprintf("requests held %s", 2*p.cfg.ClientTimeout()), nil
}

// Release lifts the hold of broker id: requests go straight to it again,
// and those held arrive when their delay ends.
func (p *Phases) Release(id int32) error {
	delete(p.holds.held, id)
	return nil
}
