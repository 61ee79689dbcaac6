// Package scripting compiles hook source written in Starlark or JavaScript into Programs and
// invokes their functions in-process, sandboxed and under budgets.
//
// Compiled code is immutable and shared; execution state is per call. A Program may be called
// from many goroutines at once: each Call gets fresh execution state (a new Starlark Thread over
// a frozen module, a pooled JavaScript runtime whose globals are reset), so nothing one call
// writes is visible to the next, nor to another Program.
//
// Values cross the boundary in their JSON shape: map[string]any, []any, string, bool, int64,
// float64 and nil (the shape of unstructured.Unstructured.Object). The request handed to Call
// is never mutated, and the hook sees it as a read-only view: a hook that mutates its request
// changes nothing outside its own call.
//
// Errors are typed: *CompileError, *RuntimeError, *BudgetError and *OutputError.
package scripting

import (
	"context"
	"log/slog"
	"time"
)

// Language names a hook language.
type Language string

const (
	Starlark   Language = "starlark"
	JavaScript Language = "javascript"
)

// Budget limits one invocation. A zero field means "use the Runtime's default"; every field
// is capped by the Runtime's ceiling.
type Budget struct {
	// Timeout is the wall-clock limit (both languages).
	Timeout time.Duration
	// MaxSteps limits Starlark execution steps (ignored by JavaScript).
	MaxSteps uint64
	// MaxStackDepth limits the depth of the hook's own call stack.
	MaxStackDepth int
	// MaxMemory is the allocation budget in bytes (see WatchMemory for what it guarantees).
	MaxMemory int64
	// MaxOutputBytes caps the approximate size in bytes of the converted result.
	MaxOutputBytes int64
	// MaxOutputObjects caps the number of values (maps, lists and leaves) in the result.
	MaxOutputObjects int64
}

// Invocation is one call of a hook function.
type Invocation struct {
	// Function is the top-level function to call, e.g. "sync".
	Function string
	// Request is passed as the function's single argument. It is read, never written.
	Request map[string]any
	// Budget limits this call; zero fields take the Runtime's defaults.
	Budget Budget
	// Log receives the hook's log module output; nil discards it. The engine tags it with
	// the controller and object.
	Log *slog.Logger
	// Now is the only clock the hook can read (stdlib time). A Runtime's Program sets it
	// from Options.Now when nil; nil at the adapter means time.Now.
	Now func() time.Time
}

// Program is compiled hook source. It is immutable and safe for concurrent use.
type Program interface {
	// Language is the language the Program was compiled from.
	Language() Language
	// Functions lists the top-level functions the source defines, sorted.
	Functions() []string
	// Call invokes inv.Function with inv.Request and returns its result converted to the
	// JSON shape. The result is owned by the caller. ctx cancellation stops the call.
	Call(ctx context.Context, inv Invocation) (any, error)
}

// Compiler is one language adapter. Compile must be safe for concurrent use and must not
// cache: the Runtime caches.
type Compiler interface {
	Language() Language
	// Version identifies the compiler in cache keys: a new interpreter version recompiles.
	Version() string
	// Compile parses and resolves source. name is used in positions and stack traces. A
	// syntax error is returned as *CompileError.
	Compile(name, source string) (Program, error)
}
