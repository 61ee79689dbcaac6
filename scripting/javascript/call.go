package javascript

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/dop251/goja"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/stdlib"
)

// Call runs inv.Function on a pooled, hardened goja Runtime, on the calling goroutine, and
// returns its result in the JSON shape.
//
// Isolation. The compiled program is shared; each call takes a Runtime no other call is
// using (pool.go) and evaluates the program afresh in it, so top-level bindings, closures and
// every object the hook makes are new. What a Runtime keeps between calls cannot carry
// anything from one call to the next:
//
//   - Built-ins. Before its first call every object reachable from the intrinsics (global
//     constructors and namespaces, their prototypes and functions, the hidden iterator,
//     generator and async-function prototypes, %ThrowTypeError%, and the sandbox's own Go
//     functions) is frozen (harden.js). A hook can neither add, change nor delete their
//     properties nor change their prototypes; a write fails as on any frozen object
//     (silently in sloppy code, with a TypeError in strict code). So that ordinary code
//     keeps working, the properties code commonly assigns on objects that inherit them
//     (every property of Object.prototype; constructor, name, message and toString of the
//     Error prototypes; constructor and toString of Function.prototype) are accessors
//     whose setter defines an own property on the receiver: `dict.constructor = 1` and
//     `this.name = "MyError"` behave as in an unfrozen realm. None of goja's prototypes carries internal state (Date.prototype,
//     Map.prototype and so on are ordinary objects), so frozen means unchangeable.
//   - Globals. The hook's global object is a per-call overlay over the frozen real one
//     (sandbox.go): assignments, implicit globals and deletions land in the overlay, which
//     is dropped when the call ends.
//   - Runtime state outside objects. The symbol registry is per call (Symbol.for and
//     Symbol.keyFor are replaced); pending promise jobs are run to completion before the
//     Runtime is returned (goja runs them when control leaves the Runtime, and the end of
//     every call leaves it); the clock and stack limit are set per call; goja keeps no
//     other state reachable from script (no RegExp statics, no Error.prepareStackTrace or
//     captureStackTrace, template objects are made per evaluation). The typed arrays,
//     ArrayBuffer, DataView and eval are deleted before hardening: hooks never see them.
//   - Failed calls. A Runtime returns to the pool only after a call that ended without an
//     interrupt, a budget error or an internal error; any other is discarded, so a hook
//     stopped half-way through a built-in leaves nothing behind. A stop requested after
//     the call ended is ignored (scripting.CallWatch.End).
//
// Hardening a Runtime costs milliseconds, paid once per pooled Runtime and again for each
// discarded one; a call on a pooled Runtime pays only for its global overlay and the
// evaluation of the program. Writes to built-ins that a fresh Runtime would have allowed
// (polyfills, `Array.prototype.sum = ...`) fail instead; a hook must define such helpers as
// its own functions.
//
// Budgets (b is inv.Budget with zero fields taken from scripting.DefaultBudget):
//
//   - Timeout and ctx interrupt the Runtime; goja stops at its next instruction. A Go
//     built-in already running is not interrupted and finishes first: the ones that could
//     run long or allocate much are guarded (guard.go lists what no guard covers) and
//     backtracking regular expressions time out.
//   - MaxStackDepth is goja's call-stack limit, exact.
//   - MaxMemory: pre-allocation checks on amplifying built-ins (guard.go) plus the
//     scripting allocation watchdog, which interrupts the Runtime.
//   - MaxOutputBytes and MaxOutputObjects are charged while the result is converted.
//
// Budget errors cannot be caught by the hook: they are goja interrupts, not exceptions.
func (p *Program) Call(ctx context.Context, inv scripting.Invocation) (any, error) {
	b := inv.Budget.WithDefaults(scripting.DefaultBudget)
	if ctx.Err() != nil {
		return nil, scripting.Cancelled(ctx, scripting.JavaScript, p.name)
	}
	// Taken before the budgets start: a Runtime built here is not the hook's cost.
	h := getRuntime()
	cs := &callState{p: p, log: inv.Log, now: inv.Now, h: h, rt: h.rt}
	if cs.now == nil {
		cs.now = time.Now
	}
	h.cur = cs
	cs.watch.Start(ctx, scripting.JavaScript, p.name, b, cs)
	res, err := cs.run(inv)
	unstopped := cs.watch.End()
	var be *scripting.BudgetError
	if unstopped && !cs.poisoned && !errors.As(err, &be) {
		putRuntime(h)
	} else {
		refillRuntime()
	}
	return res, err
}

// interruptValue is what the Runtime is interrupted with; only its type matters.
type interruptValue struct{ reason scripting.StopReason }

func (v interruptValue) Error() string { return "interrupted" }

// Cancel interrupts the Runtime for the watch.
func (cs *callState) Cancel(r scripting.StopReason) { cs.rt.Interrupt(interruptValue{r}) }

// callState is the execution state of one invocation, used only by the goroutine running
// the hook (but for watch; see scripting.CallWatch).
type callState struct {
	p   *Program
	log *slog.Logger
	now func() time.Time

	h  *hardRuntime
	rt *goja.Runtime // h.rt
	// watch holds the budget and interrupts the Runtime for the first reason, a guard's
	// refusal or its own.
	watch scripting.CallWatch
	env   *stdlib.Env // made on first stdlib call
	// global is the hook's global object (see globalObject).
	global *goja.Object
	// modules holds the stdlib module objects made so far.
	modules map[string]goja.Value
	// libExports are the exports of the library modules required so far in this call.
	libExports map[*libModule]goja.Value
	// symbols is the call's symbol registry (Symbol.for).
	symbols map[string]*goja.Symbol
	// poisoned marks a Runtime that must not be reused: the call panicked, overflowed the
	// stack or could not drain its promise jobs.
	poisoned bool

	// joinDepth guards the recursion of Array.prototype.join through nested arrays.
	joinDepth int
	// generatorDepth counts nested generator calls (guard_iter.go).
	generatorDepth int
}

// budget is the budget the call runs under.
func (cs *callState) budget() scripting.Budget { return cs.watch.Budget() }

// refuse records a guard's refusal, interrupts the Runtime and throws. The exception ends
// whatever Go built-in is running (Array.from calling a guarded constructor, say) at once;
// the interrupt then stops the hook at its next instruction, even inside a catch block, so
// the hook cannot swallow the refusal.
func (cs *callState) refuse(be *scripting.BudgetError) {
	cs.watch.Refuse(be)
	cs.watch.Stop(scripting.StoppedRefused)
	panic(cs.rt.NewTypeError(be.Error()))
}

// reserve is the pre-allocation check of guarded built-ins: it returns if n more bytes may
// be allocated and refuses (see refuse) otherwise.
func (cs *callState) reserve(n int64) {
	if err := cs.watch.Reserve(n); err != nil {
		cs.refuse(err.(*scripting.BudgetError))
	}
}

// run prepares the call's global object, runs the top-level code, calls the function and
// converts its result. It recovers every panic, so that a bug or an unexpected goja panic
// becomes an error rather than a crash.
func (cs *callState) run(inv scripting.Invocation) (res any, err error) {
	rt := cs.rt
	rt.SetMaxCallStackSize(cs.budget().MaxStackDepth)
	rt.SetTimeSource(cs.now)
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, cs.mapError(v)
			cs.poisoned = true
		}
		cs.drainJobs()
	}()
	cs.newGlobal()

	wrapper, err := rt.RunProgram(cs.p.prg)
	if err != nil {
		return nil, cs.mapError(err)
	}
	fn, err := cs.lookup(wrapper, inv.Function)
	if err != nil {
		return nil, err
	}
	req := cs.newRequest(inv.Request)
	v, err := fn(goja.Undefined(), req)
	if err != nil {
		return nil, cs.mapError(err)
	}
	c := newConverter(cs)
	out, err := c.convert(v)
	if err != nil {
		return nil, cs.mapError(err)
	}
	if cs.watch.Reason() != scripting.NotStopped {
		// Stopped during conversion without running script code, which would have raised
		// the interrupt: report the budget all the same.
		return nil, cs.mapError(&goja.InterruptedError{})
	}
	return out, nil
}

// drainJobs runs the promise jobs that script code queued while the result or a thrown
// value was converted (getters, proxy traps): goja runs queued jobs only when control
// leaves the Runtime, which conversion does not do. A job that fails to finish (an
// interrupt, a panic) poisons the Runtime.
func (cs *callState) drainJobs() {
	if cs.poisoned || cs.watch.Reason() != scripting.NotStopped {
		return
	}
	defer func() {
		if recover() != nil {
			cs.poisoned = true
		}
	}()
	if _, err := cs.h.flush(goja.Undefined()); err != nil {
		cs.poisoned = true
	}
}

// lookup finds the top-level binding name: it evaluates the wrapper function (running the
// hook's top-level code) and asks the accessor it returns; a name the source does not
// declare is looked up on the global object, for hooks that assign globalThis.sync.
func (cs *callState) lookup(wrapper goja.Value, name string) (goja.Callable, error) {
	w, ok := goja.AssertFunction(wrapper)
	if !ok {
		return nil, &scripting.RuntimeError{Language: scripting.JavaScript, Msg: "internal error: hook wrapper is not a function"}
	}
	acc, err := w(goja.Undefined(), cs.h.addFn, cs.h.arithFn)
	if err != nil {
		return nil, cs.mapError(err)
	}
	get, ok := goja.AssertFunction(acc)
	if !ok {
		return nil, &scripting.RuntimeError{Language: scripting.JavaScript,
			Msg: fmt.Sprintf("top-level code of %s returned early: a hook's top level must not return", cs.p.name)}
	}
	v, err := get(goja.Undefined(), cs.rt.ToValue(name))
	if err != nil {
		return nil, cs.mapError(err)
	}
	if v == nil || goja.IsUndefined(v) {
		v = cs.global.Get(name)
	}
	if v == nil || goja.IsUndefined(v) {
		return nil, &scripting.RuntimeError{Language: scripting.JavaScript,
			Msg: fmt.Sprintf("function %q is not defined in %s (top-level functions: %s)", name, cs.p.name, strings.Join(cs.p.functions, ", "))}
	}
	fn, ok := goja.AssertFunction(v)
	if !ok {
		return nil, &scripting.RuntimeError{Language: scripting.JavaScript,
			Msg: fmt.Sprintf("%q in %s is %s, not a function", name, cs.p.name, describe(v))}
	}
	return fn, nil
}

func (cs *callState) stdlibEnv() *stdlib.Env {
	if cs.env == nil {
		cs.env = &stdlib.Env{Now: cs.now, Log: cs.log, MaxBytes: cs.budget().MaxMemory,
			Reserve: func(n int64) error { return cs.watch.Memory().Reserve(scripting.JavaScript, n) }}
	}
	return cs.env
}

// stackExceeded reports the stack-depth budget, which goja found exceeded, at stack.
func (cs *callState) stackExceeded(stack []scripting.Frame) *scripting.BudgetError {
	return cs.watch.Exceeded(scripting.BudgetStackDepth, int64(cs.budget().MaxStackDepth)+1, stack)
}

// mapError turns what goja returned or panicked with into the scripting error types.
func (cs *callState) mapError(v any) error {
	var stack []scripting.Frame
	if st, ok := v.(interface{ Stack() []goja.StackFrame }); ok {
		stack = frames(st.Stack())
	}
	if be := cs.watch.Refusal(stack); be != nil {
		// A guard refused an allocation: the refusal's exception, or the interrupt that
		// follows it, ended the hook.
		return be
	}
	switch e := v.(type) {
	case *goja.InterruptedError, *goja.StackOverflowError:
		if _, ok := e.(*goja.StackOverflowError); ok {
			cs.poisoned = true
			return cs.stackExceeded(stack)
		}
		if err := cs.watch.Err(stack); err != nil {
			return err
		}
		return &scripting.RuntimeError{Language: scripting.JavaScript, Msg: "interrupted", Stack: stack}
	case *goja.Exception:
		// A guard that finds the call stopped throws; if nothing runs after it, the
		// exception rather than the interrupt ends the hook. The stop is the cause.
		if err := cs.watch.Err(stack); err != nil {
			return err
		}
		return cs.thrown(e, stack)
	case *scripting.OutputError, *scripting.BudgetError, *scripting.RuntimeError:
		return e.(error)
	case *goja.CompilerSyntaxError:
		return &scripting.RuntimeError{Language: scripting.JavaScript, Msg: e.Error(), Stack: stack}
	}
	return &scripting.RuntimeError{Language: scripting.JavaScript, Msg: fmt.Sprintf("internal error: %v", v), Stack: stack}
}

// thrown describes an uncaught exception: an Error by its name and message, any other value
// by its JSON shape, kept in Thrown.
func (cs *callState) thrown(ex *goja.Exception, stack []scripting.Frame) error {
	re := &scripting.RuntimeError{Language: scripting.JavaScript, Stack: stack}
	val := ex.Value()
	if obj, ok := val.(*goja.Object); ok && obj.ClassName() == "Error" {
		re.Msg = safeString(cs.rt, val)
		return re
	}
	c := newConverter(cs)
	if thrown, err := c.convert(val); err == nil {
		re.Thrown = thrown
		re.Msg = "uncaught exception: " + describeThrown(thrown)
	} else {
		re.Msg = "uncaught exception: " + safeString(cs.rt, val)
	}
	return re
}

// safeString is v's string conversion, or a description of v if that conversion throws.
func safeString(rt *goja.Runtime, v goja.Value) (s string) {
	if ex := rt.Try(func() { s = v.String() }); ex != nil {
		s = describe(v)
	}
	return s
}

func describeThrown(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case nil:
		return "null"
	case map[string]any:
		return fmt.Sprintf("object with %d keys", len(v))
	case []any:
		return fmt.Sprintf("array of %d elements", len(v))
	}
	return fmt.Sprint(v)
}

// frames converts a goja stack (innermost first) to scripting frames, leaving out native
// frames, which have no position, and the adapter's own operators (guard_add.go, guard_bigint.go).
func frames(st []goja.StackFrame) []scripting.Frame {
	out := make([]scripting.Frame, 0, len(st))
	for i := range st {
		f := &st[i]
		pos := f.Position()
		if pos.Line == 0 || f.SrcName() == plusSource || f.SrcName() == arithSource {
			continue
		}
		name := f.FuncName()
		if name == "" || name == wrapperName || name == moduleWrapperName {
			name = "<top level>"
		}
		col := pos.Column
		if pos.Line == 1 {
			prefix := wrapperPrefix
			if strings.HasPrefix(f.SrcName(), scripting.LibraryPrefix) {
				prefix = modulePrefix
			}
			col = max(1, col-len(prefix))
		}
		out = append(out, scripting.Frame{Function: name, File: f.SrcName(), Line: pos.Line, Column: col})
	}
	return out
}

// describe names the type of a JavaScript value for error messages.
func describe(v goja.Value) string {
	switch {
	case v == nil || goja.IsUndefined(v):
		return "undefined"
	case goja.IsNull(v):
		return "null"
	}
	if o, ok := v.(*goja.Object); ok {
		if _, ok := goja.AssertFunction(o); ok {
			return "a function"
		}
		return "a " + o.ClassName()
	}
	if _, ok := v.(*goja.Symbol); ok {
		return "a symbol"
	}
	switch v.Export().(type) {
	case int64, float64:
		return "a number"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "a bigint"
}
