package server

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"

	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/broker/wire"
)

// The controller speaks length-prefixed JSON: the messages are few, small
// and internal, and JSON keeps them readable in a packet capture. The size
// limit and framing are Kafka's (wire.ReadFrame).
type envelope struct {
	Type string          `json:"type"`
	Body json.RawMessage `json:"body"`
}

const maxControlFrame = 64 << 20

func typeOf(m any) (string, error) {
	switch m.(type) {
	case *control.RegisterRequest:
		return "register", nil
	case *control.RegisterResponse:
		return "register-response", nil
	case *control.HeartbeatRequest:
		return "heartbeat", nil
	case *control.HeartbeatResponse:
		return "heartbeat-response", nil
	case *control.AlterISRRequest:
		return "alter-isr", nil
	case *control.AlterISRResponse:
		return "alter-isr-response", nil
	case *control.CreateTopicsRequest:
		return "create-topics", nil
	case *control.CreateTopicsResponse:
		return "create-topics-response", nil
	case *errorMessage:
		return "error", nil
	}
	return "", fmt.Errorf("control: no wire type for %T", m)
}

func newOf(t string) (any, error) {
	switch t {
	case "register":
		return &control.RegisterRequest{}, nil
	case "register-response":
		return &control.RegisterResponse{}, nil
	case "heartbeat":
		return &control.HeartbeatRequest{}, nil
	case "heartbeat-response":
		return &control.HeartbeatResponse{}, nil
	case "alter-isr":
		return &control.AlterISRRequest{}, nil
	case "alter-isr-response":
		return &control.AlterISRResponse{}, nil
	case "create-topics":
		return &control.CreateTopicsRequest{}, nil
	case "create-topics-response":
		return &control.CreateTopicsResponse{}, nil
	case "error":
		return &errorMessage{}, nil
	}
	return nil, fmt.Errorf("control: unknown message type %q", t)
}

// errorMessage answers a request the controller could not handle.
type errorMessage struct{ Error string }

func writeControl(w io.Writer, m any) error {
	t, err := typeOf(m)
	if err != nil {
		return err
	}
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	frame, err := json.Marshal(envelope{Type: t, Body: body})
	if err != nil {
		return err
	}
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(frame)), uint32(len(frame)))
	_, err = w.Write(append(out, frame...))
	return err
}

func readControl(r io.Reader) (any, error) {
	frame, err := wire.ReadFrame(r, maxControlFrame, nil)
	if err != nil {
		return nil, err
	}
	var env envelope
	if err := json.Unmarshal(frame, &env); err != nil {
		return nil, fmt.Errorf("control: bad frame: %w", err)
	}
	m, err := newOf(env.Type)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(env.Body, m); err != nil {
		return nil, fmt.Errorf("control: bad %s body: %w", env.Type, err)
	}
	if e, ok := m.(*errorMessage); ok {
		return nil, fmt.Errorf("controller: %s", e.Error)
	}
	return m, nil
}
