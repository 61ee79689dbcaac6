package composite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/scripting"
)

// invoke calls a hook for one parent, records its metrics, and turns any failure into a
// Warning Event on the parent. The hook's log lines are tagged with controller and parent.
func (r *Runner) invoke(ctx context.Context, hookName string, hook hooks.Invoker, req map[string]any,
	parent *unstructured.Unstructured) (map[string]any, error) {
	log := r.cfg.Log.With("hook", hookName, "parent", parent.GetNamespace()+"/"+parent.GetName())
	start := time.Now()
	resp, err := hook.Invoke(ctx, req, log)
	r.cfg.Metrics.HookDuration.WithLabelValues(r.name, hookName, hook.Form()).Observe(time.Since(start).Seconds())
	if err == nil {
		r.cfg.Metrics.HookInvocations.WithLabelValues(r.name, hookName, hook.Form(), "success").Inc()
		return resp, nil
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
	err = fmt.Errorf("%s hook: %w", hookName, err)
	r.warn(parent, reason, err)
	return nil, err
}
