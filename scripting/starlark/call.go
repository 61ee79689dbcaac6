package starlark

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"go.starlark.net/starlark"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/stdlib"
)

// program is a compiled, initialised and frozen module. It is immutable.
type program struct {
	name      string
	globals   starlark.StringDict // frozen
	functions []string
}

func (p *program) Language() scripting.Language { return scripting.Starlark }

func (p *program) Functions() []string { return slices.Clone(p.functions) }

// Call runs inv.Function on a new Thread. Budgets (see scripting.Budget):
//
//   - Timeout and ctx cancel the Thread; it stops at its next step, so a Go built-in that is
//     already running finishes first (every built-in that iterates is bounded by the checks
//     in guard.go).
//   - MaxSteps is Starlark's step counter, exact.
//   - MaxStackDepth is checked every stepCheckInterval steps and on every guarded built-in,
//     so a recursion may overshoot it by the frames it can push in that many steps (a few
//     dozen) before it is stopped.
//   - MaxMemory: pre-allocation checks on amplifying operations (guard.go) plus the
//     scripting allocation watchdog, which cancels the Thread.
//   - MaxOutputBytes and MaxOutputObjects are charged while the result is converted.
func (p *program) Call(ctx context.Context, inv scripting.Invocation) (any, error) {
	fnv, ok := p.globals[inv.Function]
	if !ok {
		return nil, &scripting.RuntimeError{Language: scripting.Starlark,
			Msg: fmt.Sprintf("function %q is not defined in %s (top-level functions: %s)", inv.Function, p.name, strings.Join(p.functions, ", "))}
	}
	fn, ok := fnv.(*starlark.Function)
	if !ok {
		return nil, &scripting.RuntimeError{Language: scripting.Starlark,
			Msg: fmt.Sprintf("%q in %s is a %s, not a function", inv.Function, p.name, fnv.Type())}
	}
	b := inv.Budget.WithDefaults(scripting.DefaultBudget)
	cs := &callState{log: inv.Log, now: inv.Now}
	thread := cs.start(ctx, p.name, b)

	req := newMapView(inv.Request)
	v, err := callRecovered(thread, fn, req)
	cs.watch.End()
	scripting.RecordSteps(ctx, thread.Steps)
	if err != nil {
		return nil, cs.mapError(err)
	}
	meter := scripting.NewOutputMeter(scripting.Starlark, b)
	return toGo(v, &meter)
}

func callRecovered(thread *starlark.Thread, fn starlark.Value, req starlark.Value) (v starlark.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, &scripting.RuntimeError{Language: scripting.Starlark, Msg: fmt.Sprintf("internal error: %v", r),
				Stack: frames(thread.CallStack())}
		}
	}()
	return starlark.Call(thread, fn, starlark.Tuple{req}, nil)
}

// stepCheckInterval is how many steps run between checks of the step and depth budgets.
const stepCheckInterval = 256

// callState is the execution state of one invocation (or of one module initialisation),
// reached from built-ins through the Thread's locals.
type callState struct {
	log *slog.Logger
	now func() time.Time
	env *stdlib.Env // made on first stdlib call

	// watch holds the budget and cancels the Thread for the first reason, a step check's
	// (onSteps) or its own.
	watch     scripting.CallWatch
	depthUsed int

	thread starlark.Thread // allocated with the state; new for every invocation
}

const stateKey = "metascript.call"

// start makes the Thread and starts the watch of its budget b; cs.watch.End ends it.
func (cs *callState) start(ctx context.Context, name string, b scripting.Budget) *starlark.Thread {
	t := &cs.thread
	t.Name, t.Load, t.Print = name, loadStdlib, printToLog
	t.SetLocal(stateKey, cs)
	t.SetMaxExecutionSteps(min(stepCheckInterval, b.MaxSteps))
	t.OnMaxSteps = onSteps
	cs.watch.Start(ctx, scripting.Starlark, name, b, cs)
	return t
}

// Cancel cancels the Thread for the watch.
func (cs *callState) Cancel(r scripting.StopReason) { cs.thread.Cancel(r.String()) }

// budget is the budget the call runs under.
func (cs *callState) budget() scripting.Budget { return cs.watch.Budget() }

// onSteps runs on the interpreter goroutine every stepCheckInterval steps.
func onSteps(t *starlark.Thread) {
	cs := stateOf(t)
	if t.Steps >= cs.budget().MaxSteps {
		cs.watch.Stop(scripting.StoppedSteps)
		return
	}
	if err := cs.checkDepth(); err != nil {
		return
	}
	t.SetMaxExecutionSteps(min(t.Steps+stepCheckInterval, cs.budget().MaxSteps))
}

// checkDepth stops the Thread if its call stack is deeper than the budget.
func (cs *callState) checkDepth() error {
	if d := cs.thread.CallStackDepth(); d > cs.budget().MaxStackDepth {
		cs.depthUsed = d
		cs.watch.Stop(scripting.StoppedStackDepth)
		return errors.New(scripting.StoppedStackDepth.String())
	}
	return nil
}

// refuse records a guard's refusal; the error returned to Starlark wraps it.
func (cs *callState) refuse(be *scripting.BudgetError) error {
	cs.watch.Refuse(be)
	return be
}

// reserve is the pre-allocation check of guarded operations.
func (cs *callState) reserve(n int64) error { return cs.watch.Reserve(n) }

func printToLog(t *starlark.Thread, msg string) {
	if cs := stateOf(t); cs.log != nil {
		cs.log.Info(msg, "source", "print")
	}
}

func (cs *callState) stdlibEnv() *stdlib.Env {
	if cs.env == nil {
		cs.env = &stdlib.Env{Now: cs.now, Log: cs.log, MaxBytes: cs.budget().MaxMemory, Reserve: cs.reserve}
	}
	return cs.env
}

// mapError turns an error out of the interpreter into the scripting error types.
func (cs *callState) mapError(err error) error {
	var stack []scripting.Frame
	msg := err.Error()
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		stack = frames(ee.CallStack)
		msg = ee.Msg
	}
	// A stop is the cause of whatever error it ended the Thread with.
	switch cs.watch.Reason() {
	case scripting.StoppedSteps:
		return cs.watch.Exceeded(scripting.BudgetSteps, int64(cs.thread.Steps), stack)
	case scripting.StoppedStackDepth:
		return cs.watch.Exceeded(scripting.BudgetStackDepth, int64(cs.depthUsed), stack)
	}
	if err := cs.watch.Err(stack); err != nil {
		return err
	}
	// A guard's refusal, as the error carries it or, if that was lost, as recorded.
	var refused *scripting.BudgetError
	if errors.As(err, &refused) {
		return refused.At(stack)
	}
	if be := cs.watch.Refusal(stack); be != nil {
		return be
	}
	return &scripting.RuntimeError{Language: scripting.Starlark, Msg: msg, Stack: stack}
}

// frames converts a Starlark call stack (outermost first) to scripting frames (innermost
// first), leaving out built-in frames, which have no position.
func frames(cs starlark.CallStack) []scripting.Frame {
	out := make([]scripting.Frame, 0, len(cs))
	for i := len(cs) - 1; i >= 0; i-- {
		f := cs[i]
		if f.Pos.Filename() == "<builtin>" {
			continue
		}
		out = append(out, scripting.Frame{Function: f.Name, File: f.Pos.Filename(), Line: int(f.Pos.Line), Column: int(f.Pos.Col)})
	}
	return out
}

func stateOf(t *starlark.Thread) *callState { return t.Local(stateKey).(*callState) }
