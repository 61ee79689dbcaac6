package javascript

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/stdlib"
)

// program is compiled source. It is immutable; goja programs may run in many Runtimes at
// once.
type program struct {
	name      string
	prog      *goja.Program
	functions []string
}

func (p *program) Language() scripting.Language { return scripting.JavaScript }

func (p *program) Functions() []string { return slices.Clone(p.functions) }

// Call runs the top level and then inv.Function on a new goja.Runtime, and converts the
// result. Budgets (see scripting.Budget):
//
//   - Timeout and ctx interrupt the Runtime; it stops at its next instruction, so a Go
//     built-in that is already running finishes first (the built-ins that can run long or
//     allocate much in one call are bounded by the checks in guard.go).
//   - MaxSteps does not apply: goja counts no steps.
//   - MaxStackDepth is goja's call stack limit, exact; it counts native frames too.
//   - MaxMemory: pre-allocation checks on amplifying built-ins (guard.go) plus the scripting
//     allocation watchdog, which interrupts the Runtime.
//   - MaxOutputBytes and MaxOutputObjects are charged while the result is converted.
//
// The timer and the watch stay armed while the result is converted, since reading a
// property may run a getter.
//
// Why a new Runtime per call: correctness first. A pooled Runtime would have to undo
// whatever a hook did to its global object, global lexical scope, built-in objects and
// their prototypes; goja offers no such reset. goja builds built-ins lazily, so a new
// Runtime costs about 3 µs, and the top level of a typical hook (function declarations)
// well under that.
func (p *program) Call(ctx context.Context, inv scripting.Invocation) (any, error) {
	b := inv.Budget.WithDefaults(scripting.DefaultBudget)
	cs := newCallState(p, b, inv)
	var stopCtx func() bool
	if ctx.Done() != nil {
		stopCtx = context.AfterFunc(ctx, func() { cs.stop(reasonContext) })
	}
	v, err := cs.invoke(inv.Function, inv.Request)
	if stopCtx != nil {
		stopCtx()
	}
	cs.finish()
	if err != nil && cs.reason.Load() == reasonContext {
		return nil, fmt.Errorf("javascript hook %s: %w", p.name, context.Cause(ctx))
	}
	return v, err
}

// Reasons a Runtime was interrupted.
const (
	reasonNone int32 = iota
	reasonTimeout
	reasonMemory
	reasonContext
	reasonDone // the call returned; later stops are ignored
)

var reasonText = [...]string{"", "timeout", "memory budget exhausted", "context cancelled", ""}

// callState is the execution state of one invocation (or of one top-level run at compile
// time): its Runtime, its armed budgets and the request views. It is used by the goroutine
// running the hook, except stop, which the timer, the watchdog and ctx call.
type callState struct {
	prog   *program
	budget scripting.Budget
	log    *slog.Logger
	now    func() time.Time
	env    *stdlib.Env // made on first stdlib call

	rt      *goja.Runtime
	started time.Time
	timer   *time.Timer
	watch   *scripting.MemoryWatch

	watchStopped bool

	reason  atomic.Int32
	memUsed atomic.Int64
}

// newCallState makes the Runtime with its sandbox and arms the timeout and the memory
// watch.
func newCallState(p *program, b scripting.Budget, inv scripting.Invocation) *callState {
	cs := &callState{prog: p, budget: b, log: inv.Log, now: inv.Now}
	if cs.now == nil {
		cs.now = time.Now
	}
	rt := goja.New()
	rt.SetParserOptions(parser.WithDisableSourceMaps)
	rt.SetMaxCallStackSize(b.MaxStackDepth)
	rt.SetTimeSource(cs.now)
	cs.rt = rt
	cs.installSandbox()
	cs.started = time.Now()
	cs.timer = time.AfterFunc(b.Timeout, func() { cs.stop(reasonTimeout) })
	cs.watch = scripting.StartMemoryWatch(b.MaxMemory, func(used int64) {
		cs.memUsed.Store(used)
		cs.stop(reasonMemory)
	})
	return cs
}

// finish disarms the timer and the watch.
func (cs *callState) finish() {
	cs.reason.CompareAndSwap(reasonNone, reasonDone)
	cs.timer.Stop()
	cs.stopWatchdog()
}

func (cs *callState) stopWatchdog() {
	if !cs.watchStopped {
		cs.watch.Stop()
		cs.watchStopped = true
	}
}

// stop interrupts the Runtime for reason; the first reason wins.
func (cs *callState) stop(reason int32) {
	if cs.reason.CompareAndSwap(reasonNone, reason) {
		cs.rt.Interrupt(reasonText[reason])
	}
}

// stopped reports whether the invocation was interrupted, for Go loops in guarded
// built-ins, which goja's interrupt does not reach.
func (cs *callState) stopped() bool {
	r := cs.reason.Load()
	return r != reasonNone && r != reasonDone
}

// runTopLevel runs the program's top level (at compile time).
func (cs *callState) runTopLevel() (err error) {
	defer func() {
		if x := recover(); x != nil {
			err = cs.panicError(x)
		}
	}()
	if _, err := cs.rt.RunProgram(cs.prog.prog); err != nil {
		return cs.mapError(err)
	}
	return nil
}

// invoke runs the top level, calls fn with the request and converts the result. Every
// failure is mapped to the scripting error types, including panics out of goja.
func (cs *callState) invoke(fn string, req map[string]any) (res any, err error) {
	defer func() {
		if x := recover(); x != nil {
			res, err = nil, cs.panicError(x)
		}
	}()
	if _, err := cs.rt.RunProgram(cs.prog.prog); err != nil {
		return nil, cs.mapError(err)
	}
	fv := cs.rt.Get(fn)
	if fv == nil || goja.IsUndefined(fv) {
		return nil, &scripting.RuntimeError{Language: scripting.JavaScript,
			Msg: fmt.Sprintf("function %q is not defined in %s (top-level functions: %s)", fn, cs.prog.name, strings.Join(cs.prog.functions, ", "))}
	}
	call, ok := goja.AssertFunction(fv)
	if !ok {
		return nil, &scripting.RuntimeError{Language: scripting.JavaScript,
			Msg: fmt.Sprintf("%q in %s is a %s, not a function", fn, cs.prog.name, typeName(fv))}
	}
	v, err := call(goja.Undefined(), cs.viewOf(req))
	if err != nil {
		return nil, cs.mapError(err)
	}
	v, err = cs.settle(v)
	if err != nil {
		return nil, err
	}
	// Conversion allocates the result, which the output caps bound; the watchdog would
	// charge it to the memory budget as well. Guards still reserve against the budget.
	cs.stopWatchdog()
	meter := scripting.NewOutputMeter(scripting.JavaScript, cs.budget)
	return toGo(v, &meter)
}

// settle unwraps the promise an async hook returns. Its jobs have run when the call
// returned (goja runs them as the stack empties); with no timers, one still pending never
// settles.
func (cs *callState) settle(v goja.Value) (goja.Value, error) {
	o, ok := v.(*goja.Object)
	if !ok {
		return v, nil
	}
	p, ok := o.Export().(*goja.Promise)
	if !ok {
		return v, nil
	}
	switch p.State() {
	case goja.PromiseStateFulfilled:
		return p.Result(), nil
	case goja.PromiseStateRejected:
		return nil, cs.thrown(p.Result(), nil)
	}
	return nil, &scripting.RuntimeError{Language: scripting.JavaScript,
		Msg: "the hook returned a promise that never settles (hooks have no timers or I/O to wait for)"}
}

func typeName(v goja.Value) string {
	if o, ok := v.(*goja.Object); ok {
		return o.ClassName()
	}
	return v.ExportType().String()
}

// refusal is what a guard panics with when the memory budget refuses an operation. It is
// not a JavaScript value, so goja unwinds it through every try/catch and finally: a hook
// cannot catch a budget refusal and carry on.
type refusal struct{ err *scripting.BudgetError }

// reserve is the pre-allocation check of guarded operations: it returns if n more bytes
// fit the memory budget and panics with a refusal otherwise.
func (cs *callState) reserve(n int64) {
	if err := cs.watch.Reserve(scripting.JavaScript, n); err != nil {
		be := *err.(*scripting.BudgetError)
		be.Stack = frames(cs.rt.CaptureCallStack(0, nil))
		panic(&refusal{&be})
	}
}

// checkStopped panics with the budget error of an interrupted invocation; guarded Go loops
// call it so that a timeout or the watchdog stops them too.
func (cs *callState) checkStopped() {
	if cs.stopped() {
		panic(&refusal{cs.budgetError(frames(cs.rt.CaptureCallStack(0, nil)))})
	}
}

// panicError maps what goja or a guard panicked with.
func (cs *callState) panicError(x any) error {
	switch x := x.(type) {
	case *refusal:
		return x.err
	case error:
		return cs.mapError(x)
	case goja.Value:
		return cs.thrown(x, nil)
	}
	return &scripting.RuntimeError{Language: scripting.JavaScript, Msg: fmt.Sprintf("internal error: %v", x)}
}

// budgetError is the error of an interrupted invocation.
func (cs *callState) budgetError(stack []scripting.Frame) *scripting.BudgetError {
	be := &scripting.BudgetError{Language: scripting.JavaScript, Stack: stack}
	switch cs.reason.Load() {
	case reasonTimeout:
		be.Budget, be.Limit, be.Used, be.Unit = scripting.BudgetTimeout, int64(cs.budget.Timeout), int64(time.Since(cs.started)), "ns"
	case reasonMemory:
		be.Budget, be.Limit, be.Used, be.Unit = scripting.BudgetMemory, cs.budget.MaxMemory, cs.memUsed.Load(), "bytes"
	default:
		// Context cancellation; Call reports it as the context's error.
		be.Budget, be.Limit, be.Used, be.Unit = scripting.BudgetTimeout, int64(cs.budget.Timeout), int64(time.Since(cs.started)), "ns"
	}
	return be
}

// mapError turns an error out of goja into the scripting error types.
func (cs *callState) mapError(err error) error {
	var ie *goja.InterruptedError
	var so *goja.StackOverflowError
	var ex *goja.Exception
	switch {
	case errors.As(err, &ie):
		return cs.budgetError(frames(ie.Stack()))
	case errors.As(err, &so):
		stack := frames(so.Stack())
		return &scripting.BudgetError{Language: scripting.JavaScript, Budget: scripting.BudgetStackDepth,
			Limit: int64(cs.budget.MaxStackDepth), Used: int64(cs.budget.MaxStackDepth) + 1, Unit: "frames", Stack: stack}
	case errors.As(err, &ex):
		return cs.thrown(ex.Value(), ex.Stack())
	}
	return &scripting.RuntimeError{Language: scripting.JavaScript, Msg: err.Error()}
}

// thrown reports a thrown (or rejected) value: an Error by its name and message, anything
// else in its JSON shape as Thrown.
func (cs *callState) thrown(v goja.Value, stack []goja.StackFrame) error {
	re := &scripting.RuntimeError{Language: scripting.JavaScript, Stack: frames(stack)}
	if o, ok := v.(*goja.Object); ok && o.ClassName() == "Error" {
		re.Msg = errorText(o)
		return re
	}
	meter := scripting.NewOutputMeter(scripting.JavaScript, scripting.Budget{MaxOutputBytes: 1 << 20, MaxOutputObjects: 10_000})
	if g, err := toGo(v, &meter); err == nil {
		re.Thrown = g
		text, _ := json.Marshal(g)
		re.Msg = "uncaught " + string(text)
	} else {
		re.Msg = "uncaught " + v.String()
	}
	return re
}

// errorText is "Name: message" of an Error object, read from its own and inherited
// properties without calling its toString.
func errorText(o *goja.Object) string {
	name, msg := "Error", ""
	if v := o.Get("name"); v != nil && !goja.IsUndefined(v) {
		name = v.String()
	}
	if v := o.Get("message"); v != nil && !goja.IsUndefined(v) {
		msg = v.String()
	}
	if msg == "" {
		return name
	}
	return name + ": " + msg
}

// frames converts goja's stack (innermost first) to scripting frames, leaving out native
// frames, which have no position.
func frames(stack []goja.StackFrame) []scripting.Frame {
	out := make([]scripting.Frame, 0, len(stack))
	for i := range stack {
		f := &stack[i]
		pos := f.Position()
		if pos.Filename == "" && pos.Line == 0 {
			continue
		}
		name := f.FuncName()
		if name == "" || name == "<anonymous>" && len(out) == len(stack)-1 {
			name = "<top level>"
		}
		out = append(out, scripting.Frame{Function: name, File: pos.Filename, Line: pos.Line, Column: pos.Column})
	}
	return out
}

func (cs *callState) print(level slog.Level) func(goja.FunctionCall) goja.Value {
	return func(call goja.FunctionCall) goja.Value {
		if cs.log == nil {
			return goja.Undefined()
		}
		parts := make([]string, len(call.Arguments))
		for i, a := range call.Arguments {
			parts[i] = a.String()
		}
		cs.log.Log(context.Background(), level, strings.Join(parts, " "), "source", "console")
		return goja.Undefined()
	}
}

func (cs *callState) stdlibEnv() *stdlib.Env {
	if cs.env == nil {
		cs.env = &stdlib.Env{Now: cs.now, Log: cs.log}
	}
	return cs.env
}
