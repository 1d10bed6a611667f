package cli

import (
	"context"
	"errors"
)

// validateOnlyKey marks a context in which commands stop once their flags
// and arguments are checked (see ValidateOnly).
type validateOnlyKey struct{}

// ErrValidated is what a command returns in a validation-only context
// instead of starting anything.
var ErrValidated = errors.New("flags and arguments accepted; nothing started (validation only)")

// ValidateOnly returns a context in which every command that would start
// something (a cluster, a run, a campaign, a server) checks its flags and
// arguments as usual and then returns ErrValidated instead. The README's
// and the docs' test executes every documented command this way.
func ValidateOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, validateOnlyKey{}, true)
}

// StopIfValidating returns ErrValidated in a validation-only context (a
// command's, which may be nil): the last thing a command does before it
// starts anything.
func StopIfValidating(ctx context.Context) error {
	if ctx != nil && ctx.Value(validateOnlyKey{}) != nil {
		return ErrValidated
	}
	return nil
}
