package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/trace"
	"metascript.dev/metascript/scripting"
)

// invoke calls one hook for one parent, records its metrics, and turns any failure into a
// Warning Event on the parent, except a webhook's request to be called later
// (*hooks.RetryAfterError): a Normal HookBackoff Event. The hook's log lines are tagged with
// controller and parent. Before the call it waits for a slot of the controller's bound of
// hook calls and, for an inline hook, of the engine's cores (Env.Cores), neither of which
// counts against the hook's timeout.
func (r *Runner) invoke(ctx context.Context, hookName, about string, req map[string]any,
	parent *unstructured.Unstructured) (map[string]any, error) {
	hook := r.hooksOf(ctx)[hookName]
	if hook == nil {
		return nil, fmt.Errorf("%s hook: not defined", hookName)
	}
	log := newHookLog(r.cfg.Log, hookName, parent, about)
	if r.calls != nil {
		select {
		case r.calls <- struct{}{}:
			defer func() { <-r.calls }()
		case <-ctx.Done():
			return nil, &HookError{Hook: hookName, About: about, Err: ctx.Err()}
		}
	}
	if cores := r.cfg.Cores; cores != nil && inline(hook) {
		call, err := cores.Acquire(ctx, r.flow)
		if err != nil {
			return nil, &HookError{Hook: hookName, About: about, Err: err}
		}
		defer call.Release()
	}
	if !inline(hook) {
		// A webhook may take its whole timeout: the reconcile's seat is free meanwhile.
		if s := seatOf(ctx); s != nil {
			defer s.leave(ctx)()
		}
	}
	start := time.Now()
	span := trace.SpanOf(ctx)
	var used scripting.Usage
	if span != nil {
		ctx = scripting.WithUsage(ctx, &used)
	}
	resp, err := hook.Invoke(ctx, req, log)
	span.Call(hookName, about, hook.Form(), time.Since(start),
		trace.Used{Timeout: used.Timeout, Steps: used.Steps, MaxSteps: used.MaxSteps}, resp, err)
	r.cfg.Metrics.HookDuration.WithLabelValues(r.name, hookName, hook.Form()).Observe(time.Since(start).Seconds())
	if err == nil {
		r.cfg.Metrics.HookInvocations.WithLabelValues(r.name, hookName, hook.Form(), "success").Inc()
		return resp, nil
	}
	err = &HookError{Hook: hookName, About: about, Err: err}
	var later *hooks.RetryAfterError
	if errors.As(err, &later) {
		r.cfg.Metrics.HookInvocations.WithLabelValues(r.name, hookName, hook.Form(), "error").Inc()
		if !quiet(ctx) {
			r.event(parent, corev1.EventTypeNormal, "HookBackoff", err.Error())
		}
		return nil, err
	}
	result, reason := "error", "HookFailed"
	var budget *scripting.BudgetError
	if errors.As(err, &budget) {
		result, reason = "budget", "HookBudgetExceeded"
		r.cfg.Metrics.BudgetExhausted.WithLabelValues(r.name, hookName, budget.Budget).Inc()
	}
	var output *scripting.OutputError
	var response *hooks.ResponseError
	if errors.As(err, &output) || errors.As(err, &response) {
		result, reason = "invalid", "InvalidHookResponse"
	}
	r.cfg.Metrics.HookInvocations.WithLabelValues(r.name, hookName, hook.Form(), result).Inc()
	if !quiet(ctx) {
		r.warn(parent, reason, err)
	}
	return nil, err
}

// HookError is a hook call that failed: which hook, what for (About, as Call.About), and the
// invoker's error (the scripting package's typed errors, a webhook's).
type HookError struct {
	Hook, About string
	Err         error
}

func (e *HookError) Error() string {
	return fmt.Sprintf("%s hook%s: %v", e.Hook, aboutSuffix(e.About), e.Err)
}

func (e *HookError) Unwrap() error { return e.Err }

// inline reports whether a hook runs in the engine's process, on its cores: a webhook waits
// on the network instead, and takes no core slot.
func inline(hook hooks.Invoker) bool {
	return hook.Form() != "webhook"
}

// callSlots is the bound of n hook calls at once, or nil for none.
func callSlots(n int) chan struct{} {
	if n <= 0 {
		return nil
	}
	return make(chan struct{}, n)
}

// aboutSuffix is " for <about>" when about names what a hook was called for.
func aboutSuffix(about string) string {
	if about == "" {
		return ""
	}
	return " for " + about
}

func (r *Runner) warn(obj *unstructured.Unstructured, reason string, err error) {
	r.event(obj, corev1.EventTypeWarning, reason, err.Error())
}

// The rate of the Events the engine records about one controller's parents failing: a
// burst, then one a second. A controller whose parents fail without end (many parents, a
// short resync) so leaves a sample of its failures in Events instead of writing one each
// time, and spends little of its tenant's share of the API rate on them; its conditions and
// metrics still count every failure.
const (
	failureEventBurst = 30
	failureEventRate  = 1 // a second
)

// event records an Event about a failure on obj, within the controller's rate of them
// (metascript_engine_events_total counts those recorded and those limited).
func (r *Runner) event(obj *unstructured.Unstructured, eventType, reason, msg string) {
	if r.failureEvents != nil && !r.failureEvents.Allow() {
		r.cfg.Metrics.EngineEvents.WithLabelValues(r.name, "limited").Inc()
		return
	}
	r.cfg.Recorder.Event(obj, eventType, reason, truncate(msg, 1024))
	r.cfg.Metrics.EngineEvents.WithLabelValues(r.name, "recorded").Inc()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
