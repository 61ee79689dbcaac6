package scripting

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// StopReason is why an invocation was stopped. The first reason raised wins; later ones are
// ignored.
type StopReason int32

const (
	NotStopped StopReason = iota
	// Raised by the CallWatch itself, and reported by CallWatch.Err.
	StoppedTimeout // Budget.Timeout passed
	StoppedMemory  // the allocation watchdog charged more than Budget.MaxMemory
	StoppedContext // the caller's context was done
	// Raised, and reported, by the adapter that found them.
	StoppedSteps      // Budget.MaxSteps (Starlark)
	StoppedStackDepth // Budget.MaxStackDepth, where the interpreter does not enforce it
	StoppedRefused    // a guard refused an operation (CallWatch.Refuse) and stops the call

	// ended marks a call that returned before any stop: later stops are ignored.
	ended
)

var stopText = [...]string{"", "timeout", "memory budget exhausted", "context cancelled",
	"step budget exhausted", "stack depth budget exhausted", "refused by a guard", "ended"}

func (r StopReason) String() string { return stopText[r] }

// CallWatch is the lifecycle of one invocation's budgets, shared by the adapters: it arms the
// wall-clock timeout, the memory watch (WatchMemory) and the caller's context, stops the
// interpreter for the first reason raised, and builds the error that reports the stop.
//
// An adapter calls Start before the hook runs, Stop for the reasons it finds itself, End
// once the interpreter has returned, and then Err for the error to report. The zero value is
// ready for Start; adapters embed it in their per-call state, memory watch included, to
// spare allocations. A CallWatch serves one invocation and must not be copied once started.
//
// Goroutines: Stop and Reason are safe from any goroutine (the timer's, the watchdog's, the
// context's and the interpreter's). Every other method belongs to the goroutine that runs
// the interpreter.
type CallWatch struct {
	lang    Language
	name    string
	budget  Budget
	ctx     context.Context
	cancel  Canceler
	started time.Time
	timer   *time.Timer
	stopCtx func() bool
	mw      memWatch

	reason  atomic.Int32
	memUsed atomic.Int64
	refused *BudgetError
}

// Canceler stops an invocation's interpreter (Thread.Cancel, Runtime.Interrupt). A CallWatch
// calls Cancel at most once, from any goroutine, with the reason that won. An adapter's
// per-call state implements it, which spares a closure a call.
type Canceler interface{ Cancel(StopReason) }

// Start arms the budgets of the invocation of hook name: b, its zero fields already
// defaulted, and ctx (not nil). The timeout counts from here; cancel stops the interpreter.
func (w *CallWatch) Start(ctx context.Context, lang Language, name string, b Budget, cancel Canceler) {
	w.lang, w.name, w.budget, w.ctx, w.cancel = lang, name, b, ctx, cancel
	w.started = time.Now()
	w.timer = time.AfterFunc(b.Timeout, func() { w.Stop(StoppedTimeout) })
	w.mw = memWatch{limit: b.MaxMemory, exceeded: w}
	w.mw.start()
	if ctx.Done() != nil {
		w.stopCtx = context.AfterFunc(ctx, func() { w.Stop(StoppedContext) })
	}
}

// Stop stops the invocation for reason unless it was already stopped or has ended.
func (w *CallWatch) Stop(reason StopReason) {
	if w.reason.CompareAndSwap(int32(NotStopped), int32(reason)) {
		w.cancel.Cancel(reason)
	}
}

// memoryExceeded is the watchdog's cancellation, from its goroutine.
func (w *CallWatch) memoryExceeded(used int64) {
	// Stored before the stop, so that whoever sees the reason sees what was used.
	w.memUsed.Store(used)
	w.Stop(StoppedMemory)
}

// Reason is the reason the invocation was stopped for, or NotStopped.
func (w *CallWatch) Reason() StopReason {
	if r := StopReason(w.reason.Load()); r != ended {
		return r
	}
	return NotStopped
}

// End disarms the timeout, the memory watch and the context, and reports whether the
// invocation ran to its end without being stopped; a Stop after End is ignored, so an
// interpreter reused for another call is not stopped for this one. Call it exactly once,
// after the interpreter returned.
func (w *CallWatch) End() (unstopped bool) {
	w.timer.Stop()
	if u := usageOf(w.ctx); u != nil {
		u.Duration, u.Timeout, u.MaxSteps = time.Since(w.started), w.budget.Timeout, uint64(w.budget.MaxSteps)
	}
	if w.stopCtx != nil {
		w.stopCtx()
	}
	w.Memory().Stop()
	return w.reason.CompareAndSwap(int32(NotStopped), int32(ended))
}

// Budget is the budget the invocation runs under, as given to Start.
func (w *CallWatch) Budget() Budget { return w.budget }

// Memory is the invocation's memory watch, for the checks made before an allocation; End
// stops it.
func (w *CallWatch) Memory() MemoryWatch { return MemoryWatch{&w.mw} }

// Reserve is the pre-allocation check of a guarded operation (MemoryWatch.Reserve); a
// refusal is recorded (Refuse) and returned, a *BudgetError.
func (w *CallWatch) Reserve(n int64) error {
	if err := w.Memory().Reserve(w.lang, n); err != nil {
		w.Refuse(err.(*BudgetError))
		return err
	}
	return nil
}

// Refuse records a guard's refusal, for when the error that carried it is lost on its way
// out of the interpreter; the first refusal is kept. It does not stop the invocation.
func (w *CallWatch) Refuse(be *BudgetError) {
	if w.refused == nil {
		w.refused = be
	}
}

// Refusal is the refusal recorded by Refuse, located at stack, or nil.
func (w *CallWatch) Refusal(stack []Frame) *BudgetError {
	if w.refused == nil {
		return nil
	}
	return w.refused.At(stack)
}

// Err is the error that reports a stop the CallWatch raised, located at stack: a
// *BudgetError for the timeout and the memory budget, Cancelled for the context. It is nil
// if the invocation was not stopped, or was stopped for a reason its adapter reports.
func (w *CallWatch) Err(stack []Frame) error {
	switch w.Reason() {
	case StoppedTimeout:
		return w.Exceeded(BudgetTimeout, int64(time.Since(w.started)), stack)
	case StoppedMemory:
		return w.Exceeded(BudgetMemory, w.memUsed.Load(), stack)
	case StoppedContext:
		return Cancelled(w.ctx, w.lang, w.name)
	}
	return nil
}

// Exceeded is the *BudgetError for budget (BudgetTimeout, BudgetSteps, BudgetStackDepth or
// BudgetMemory) with used in its unit, located at stack.
func (w *CallWatch) Exceeded(budget string, used int64, stack []Frame) *BudgetError {
	e := &BudgetError{Language: w.lang, Budget: budget, Used: used, Stack: stack}
	switch budget {
	case BudgetTimeout:
		e.Limit, e.Unit = int64(w.budget.Timeout), "ns"
	case BudgetSteps:
		e.Limit, e.Unit = int64(w.budget.MaxSteps), "steps"
	case BudgetStackDepth:
		e.Limit, e.Unit = int64(w.budget.MaxStackDepth), "frames"
	case BudgetMemory:
		e.Limit, e.Unit = w.budget.MaxMemory, "bytes"
	}
	return e
}

// Cancelled is the error of a hook call that ctx stopped: the context's cause, naming the
// hook.
func Cancelled(ctx context.Context, lang Language, name string) error {
	return fmt.Errorf("%s hook %s: %w", lang, name, context.Cause(ctx))
}
