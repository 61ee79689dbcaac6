package scripting

import (
	"context"
	"time"
)

// Usage is what one invocation used of its budget, for traces: filled when the invocation
// ends, if its context carries one (WithUsage). An invocation's Usage is written by that
// invocation alone.
type Usage struct {
	// Duration is how long the interpreter ran, of Timeout.
	Duration, Timeout time.Duration
	// Steps is the Starlark interpreter's step count, of MaxSteps; JavaScript counts none.
	Steps, MaxSteps uint64
}

type usageKey struct{}

// WithUsage returns ctx carrying u, for the invocation called with it to fill.
func WithUsage(ctx context.Context, u *Usage) context.Context {
	return context.WithValue(ctx, usageKey{}, u)
}

// usageOf is the Usage ctx carries, nil when none.
func usageOf(ctx context.Context) *Usage {
	u, _ := ctx.Value(usageKey{}).(*Usage)
	return u
}

// RecordSteps sets the step count of the invocation called with ctx, if it carries a Usage.
func RecordSteps(ctx context.Context, steps uint64) {
	if u := usageOf(ctx); u != nil {
		u.Steps = steps
	}
}
