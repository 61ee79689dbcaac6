package starlark

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
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
	cs := newCallState(b, inv.Log, inv.Now)
	thread := cs.start(p.name)
	var stopCtx func() bool
	if ctx.Done() != nil {
		stopCtx = context.AfterFunc(ctx, func() { cs.stop(reasonContext) })
	}

	req := newMapView(inv.Request)
	v, err := callRecovered(thread, fn, req)
	if stopCtx != nil {
		stopCtx()
	}
	cs.finish()
	if err != nil {
		if cs.reason.Load() == reasonContext {
			return nil, fmt.Errorf("starlark hook %s: %w", p.name, context.Cause(ctx))
		}
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

// Reasons a Thread was cancelled.
const (
	reasonNone int32 = iota
	reasonTimeout
	reasonSteps
	reasonDepth
	reasonMemory
	reasonContext
)

var reasonText = [...]string{"", "timeout", "step budget exhausted", "stack depth budget exhausted", "memory budget exhausted", "context cancelled"}

// callState is the execution state of one invocation (or of one module initialisation),
// reached from built-ins through the Thread's locals.
type callState struct {
	budget scripting.Budget
	log    *slog.Logger
	now    func() time.Time
	env    *stdlib.Env // made on first stdlib call

	thread  *starlark.Thread // &ownThread
	started time.Time
	timer   *time.Timer
	watch   *scripting.MemoryWatch

	reason    atomic.Int32
	depthUsed int
	memUsed   atomic.Int64
	budgetErr *scripting.BudgetError // set by a guard that refused an operation

	ownThread starlark.Thread // allocated with the state; new for every invocation
}

const stateKey = "metascript.call"

func newCallState(b scripting.Budget, log *slog.Logger, now func() time.Time) *callState {
	return &callState{budget: b, log: log, now: now}
}

// start makes the Thread and arms the timeout and the memory watch.
func (cs *callState) start(name string) *starlark.Thread {
	t := &cs.ownThread
	t.Name, t.Load, t.Print = name, loadStdlib, printToLog
	t.SetLocal(stateKey, cs)
	t.SetMaxExecutionSteps(min(stepCheckInterval, cs.budget.MaxSteps))
	t.OnMaxSteps = onSteps
	cs.thread = t
	cs.started = time.Now()
	cs.timer = time.AfterFunc(cs.budget.Timeout, func() { cs.stop(reasonTimeout) })
	cs.watch = scripting.StartMemoryWatch(cs.budget.MaxMemory, func(used int64) {
		cs.memUsed.Store(used)
		cs.stop(reasonMemory)
	})
	return t
}

// finish disarms the timer and the watch.
func (cs *callState) finish() {
	cs.timer.Stop()
	cs.watch.Stop()
}

// stop cancels the Thread for reason; the first reason wins.
func (cs *callState) stop(reason int32) {
	if cs.reason.CompareAndSwap(reasonNone, reason) {
		cs.thread.Cancel(reasonText[reason])
	}
}

// onSteps runs on the interpreter goroutine every stepCheckInterval steps.
func onSteps(t *starlark.Thread) {
	cs := stateOf(t)
	if t.Steps >= cs.budget.MaxSteps {
		cs.stop(reasonSteps)
		return
	}
	if err := cs.checkDepth(); err != nil {
		return
	}
	t.SetMaxExecutionSteps(min(t.Steps+stepCheckInterval, cs.budget.MaxSteps))
}

// checkDepth stops the Thread if its call stack is deeper than the budget.
func (cs *callState) checkDepth() error {
	if d := cs.thread.CallStackDepth(); d > cs.budget.MaxStackDepth {
		cs.depthUsed = d
		cs.stop(reasonDepth)
		return errors.New(reasonText[reasonDepth])
	}
	return nil
}

// refuse records a guard's refusal; the error returned to Starlark wraps it.
func (cs *callState) refuse(be *scripting.BudgetError) error {
	cs.budgetErr = be
	return be
}

// reserve is the pre-allocation check of guarded operations.
func (cs *callState) reserve(n int64) error {
	if err := cs.watch.Reserve(scripting.Starlark, n); err != nil {
		return cs.refuse(err.(*scripting.BudgetError))
	}
	return nil
}

func printToLog(t *starlark.Thread, msg string) {
	if cs := stateOf(t); cs.log != nil {
		cs.log.Info(msg, "source", "print")
	}
}

func (cs *callState) stdlibEnv() *stdlib.Env {
	if cs.env == nil {
		cs.env = &stdlib.Env{Now: cs.now, Log: cs.log, MaxBytes: cs.budget.MaxMemory, Reserve: cs.reserve}
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
	be := func(budget string, limit, used int64, unit string) error {
		return &scripting.BudgetError{Language: scripting.Starlark, Budget: budget, Limit: limit, Used: used, Unit: unit, Stack: stack}
	}
	switch cs.reason.Load() {
	case reasonTimeout:
		return be(scripting.BudgetTimeout, int64(cs.budget.Timeout), int64(time.Since(cs.started)), "ns")
	case reasonSteps:
		return be(scripting.BudgetSteps, int64(cs.budget.MaxSteps), int64(cs.thread.Steps), "steps")
	case reasonDepth:
		return be(scripting.BudgetStackDepth, int64(cs.budget.MaxStackDepth), int64(cs.depthUsed), "frames")
	case reasonMemory:
		return be(scripting.BudgetMemory, cs.budget.MaxMemory, cs.memUsed.Load(), "bytes")
	}
	var refused *scripting.BudgetError
	if errors.As(err, &refused) || cs.budgetErr != nil {
		if refused == nil {
			refused = cs.budgetErr
		}
		e := *refused
		e.Stack = stack
		return &e
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
