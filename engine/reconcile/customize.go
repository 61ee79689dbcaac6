package reconcile

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/protocol"
)

// relatedOf returns the parent's related rules and the request's related map. Without a
// customize hook both are empty. With one, its answer is reused while the parent's
// fingerprint (generation, labels, annotations) stays, and asked again otherwise; a failure
// of the hook (reported like any hook's) or an invalid answer stops the reconcile before
// anything is written. Informers of the resources the rules name are started here.
func (r *Runner) relatedOf(ctx context.Context, parent *unstructured.Unstructured) ([]RelatedRule, map[string]any, error) {
	if r.cfg.Hooks["customize"] == nil {
		return nil, map[string]any{}, nil
	}
	rules, err := r.customize(ctx, parent)
	if err == nil {
		err = r.ensureRelated(ctx, relatedResources(rules))
	}
	if err != nil {
		r.pruneRelated()
		return nil, nil, err
	}
	return rules, relatedMap(parent, rules, r.cfg.HookVersion, r.relatedCache), nil
}

// customize returns the parent's related rules, from the cached answer when it stands.
func (r *Runner) customize(ctx context.Context, parent *unstructured.Unstructured) ([]RelatedRule, error) {
	fp := protocol.ParentFingerprint(parent)
	r.related.mu.Lock()
	cached, ok := r.related.answers[parent.GetUID()]
	r.related.mu.Unlock()
	if ok && cached.fingerprint == fp {
		return cached.rules, nil
	}
	resp, err := r.invoke(ctx, "customize", "", map[string]any{"controller": r.cfg.ControllerObject, "parent": parent.Object}, parent)
	if err != nil {
		return nil, err
	}
	rules, err := parseCustomize(resp, parent, r.cfg.Resolver)
	if err != nil {
		var invalid *protocol.InvalidResponseError
		if errors.As(err, &invalid) {
			r.cfg.Metrics.HookInvocations.WithLabelValues(r.name, "customize", r.cfg.Hooks["customize"].Form(), "invalid").Inc()
			r.warn(parent, "InvalidHookResponse", fmt.Errorf("customize hook: %w", err))
		}
		return nil, err
	}
	r.related.mu.Lock()
	r.related.answers[parent.GetUID()] = customizeAnswer{fingerprint: fp, rules: rules}
	r.related.mu.Unlock()
	return rules, nil
}
