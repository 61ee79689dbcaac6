package scripting

import "time"

// DefaultBudget is what an invocation gets for each Budget field that neither the caller
// nor Options.Defaults sets.
var DefaultBudget = Budget{
	Timeout:          time.Second,
	MaxSteps:         10_000_000,
	MaxStackDepth:    500,
	MaxMemory:        64 << 20,
	MaxOutputBytes:   64 << 20,
	MaxOutputObjects: 500_000,
}

// DefaultCeilings caps every invocation for each Budget field Options.Ceilings leaves zero.
// MaxStackDepth stays well below the depth at which an interpreter's own Go stack becomes a
// risk for the process.
var DefaultCeilings = Budget{
	Timeout:          30 * time.Second,
	MaxSteps:         1_000_000_000,
	MaxStackDepth:    10_000,
	MaxMemory:        1 << 30,
	MaxOutputBytes:   512 << 20,
	MaxOutputObjects: 10_000_000,
}

// WithDefaults returns b with every zero field taken from d. Adapters apply it with
// DefaultBudget so that a Program called outside a Runtime is still bounded.
func (b Budget) WithDefaults(d Budget) Budget {
	if b.Timeout <= 0 {
		b.Timeout = d.Timeout
	}
	if b.MaxSteps == 0 {
		b.MaxSteps = d.MaxSteps
	}
	if b.MaxStackDepth <= 0 {
		b.MaxStackDepth = d.MaxStackDepth
	}
	if b.MaxMemory <= 0 {
		b.MaxMemory = d.MaxMemory
	}
	if b.MaxOutputBytes <= 0 {
		b.MaxOutputBytes = d.MaxOutputBytes
	}
	if b.MaxOutputObjects <= 0 {
		b.MaxOutputObjects = d.MaxOutputObjects
	}
	return b
}

// Capped returns b with every field lowered to at most c's.
func (b Budget) Capped(c Budget) Budget {
	b.Timeout = min(b.Timeout, c.Timeout)
	b.MaxSteps = min(b.MaxSteps, c.MaxSteps)
	b.MaxStackDepth = min(b.MaxStackDepth, c.MaxStackDepth)
	b.MaxMemory = min(b.MaxMemory, c.MaxMemory)
	b.MaxOutputBytes = min(b.MaxOutputBytes, c.MaxOutputBytes)
	b.MaxOutputObjects = min(b.MaxOutputObjects, c.MaxOutputObjects)
	return b
}

// ArgumentBudget is the budget whose output caps meter the conversion of a stdlib call's
// arguments into the JSON shape: b's, with MaxOutputBytes no larger than half of
// MaxMemory. Arguments sharing one value many times are converted once per reference, in
// one Go call that the allocation watchdog cannot interrupt; the meter counts headers, about
// half of what the Go values take.
func ArgumentBudget(b Budget) Budget {
	b = b.WithDefaults(DefaultBudget)
	b.MaxOutputBytes = min(b.MaxOutputBytes, b.MaxMemory/2)
	return b
}
