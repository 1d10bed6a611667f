package netfault

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/chaos-isr/chaos/proxy"
)

// RelayControl is the abstract unix socket a node's relay takes its delays
// on. Abstract sockets belong to a network namespace, so each container
// has its own, and "chaos netfault apply" run beside it reaches it without
// a file system (the image has none to write to) or a port.
const RelayControl = "@chaos-netfault-relay"

// RelayLink is one link of a node's relay: the node dials Listen, on its
// loopback, instead of Target, the peer's address; To names the peer.
type RelayLink struct {
	To, Listen, Target string
}

// ParseRelayLink reads "to=listen=target", as chaos netfault relay takes
// it.
func ParseRelayLink(s string) (RelayLink, error) {
	p := strings.Split(s, "=")
	if len(p) != 3 || p[0] == "" || p[1] == "" || p[2] == "" {
		return RelayLink{}, fmt.Errorf("relay link %q: want to=listen=target", s)
	}
	return RelayLink{To: p[0], Listen: p[1], Target: p[2]}, nil
}

func (l RelayLink) String() string { return l.To + "=" + l.Listen + "=" + l.Target }

// RelayDelay delays both directions of the relay's link to To: the
// requests the node sends and the answers it gets, as netem on both ends
// of the link would. Jitter and Seed are proxy.Link.Jitter's.
type RelayDelay struct {
	To     string        `json:"to"`
	Delay  time.Duration `json:"delay"`
	Jitter time.Duration `json:"jitter,omitempty"`
	Seed   uint64        `json:"seed,omitempty"`
}

// RunRelayed is "chaos netfault relay": it starts a relay (a proxy link
// per peer, see package proxy) and runs argv under it, the node whose
// connections to its peers go through the relay, passing on the signals
// that stop it. It returns argv's exit code. The relay lives exactly as
// long as the node's container: it is the container's first process, so
// it is there before the node dials and a restart brings it back.
func RunRelayed(links []RelayLink, argv []string) (int, error) {
	if len(argv) == 0 {
		return 2, errors.New("relay: no command to run")
	}
	r, err := startRelay(links, RelayControl)
	if err != nil {
		return 2, err
	}
	defer r.close()
	self, err := os.Executable()
	if err != nil {
		return 2, err
	}
	cmd := exec.Command(self, argv...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 2, err
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 2, err
	}
	return 0, nil
}

// relay is a node's links and its control socket.
type relay struct {
	links   map[string]*proxy.Link
	control net.Listener
	done    chan struct{}
}

func startRelay(links []RelayLink, control string) (_ *relay, err error) {
	r := &relay{links: map[string]*proxy.Link{}, done: make(chan struct{})}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	for _, l := range links {
		if _, dup := r.links[l.To]; dup {
			return nil, fmt.Errorf("relay: two links to %s", l.To)
		}
		pl, err := proxy.NewLink("relay->"+l.To, "self", l.To, l.Target, l.Listen)
		if err != nil {
			return nil, err
		}
		r.links[l.To] = pl
	}
	if r.control, err = net.Listen("unix", control); err != nil {
		return nil, fmt.Errorf("relay control socket: %w", err)
	}
	go r.serve()
	return r, nil
}

func (r *relay) close() {
	if r.control != nil {
		r.control.Close()
		<-r.done
	}
	for _, l := range r.links {
		l.Close()
	}
}

// serve takes one request per connection: the JSON list of every delay
// the relay should have (a link left out is healed), answered with "ok"
// or the error.
func (r *relay) serve() {
	defer close(r.done)
	for {
		c, err := r.control.Accept()
		if err != nil {
			return
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		var delays []RelayDelay
		line, err := bufio.NewReader(c).ReadBytes('\n')
		if err == nil {
			err = json.Unmarshal(line, &delays)
		}
		if err == nil {
			err = r.set(delays)
		}
		if err != nil {
			fmt.Fprintln(c, err)
		} else {
			fmt.Fprintln(c, "ok")
		}
		c.Close()
	}
}

func (r *relay) set(delays []RelayDelay) error {
	want := map[string]RelayDelay{}
	for _, d := range delays {
		if _, ok := r.links[d.To]; !ok {
			return fmt.Errorf("relay has no link to %s", d.To)
		}
		want[d.To] = d
	}
	for to, l := range r.links {
		d, ok := want[to]
		if !ok {
			l.Heal()
			continue
		}
		l.Jitter(proxy.Both, d.Jitter, d.Seed)
		l.Delay(proxy.Both, d.Delay)
	}
	return nil
}

// setRelay gives the relay listening on control (beside this process)
// its delays.
func setRelay(ctx context.Context, control string, delays []RelayDelay) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", control)
	if err != nil {
		return fmt.Errorf("no relay in this network namespace (is the node running under chaos netfault relay?): %w", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	b, _ := json.Marshal(delays)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return err
	}
	answer, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	if answer = strings.TrimSpace(answer); answer != "ok" {
		return fmt.Errorf("relay: %s", answer)
	}
	return nil
}
