package composite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/index"
)

type result struct{ resyncAfter time.Duration }

// claimPlan is the outcome of the decision table for one parent before any write: the
// children the hook will see (kept and to-be-adopted), and the writes that make it so.
type claimPlan struct {
	observed map[int][]*unstructured.Unstructured
	adopt    []pending
	release  []pending
}

type pending struct {
	rule int
	obj  *unstructured.Unstructured
}

// reconcile brings one parent to the state its hook asks for. It reads only the cache, except
// for one live read of the parent before its first adoption.
func (r *Runner) reconcile(ctx context.Context, key string) (result, error) {
	obj, exists, err := r.parent.Indexer().GetByKey(key)
	if err != nil || !exists {
		return result{}, err
	}
	parent := obj.(*unstructured.Unstructured)
	if !r.parentSel.Matches(labels.Set(parent.GetLabels())) {
		return result{}, nil
	}
	deleting := parent.GetDeletionTimestamp() != nil
	hasFinalizer := slices.Contains(parent.GetFinalizers(), r.finalizer)
	if deleting && (r.cfg.Finalize == nil || !hasFinalizer) {
		// No finalize hook (any more): let the deletion proceed; the garbage collector
		// removes the children.
		if hasFinalizer {
			return result{}, r.removeFinalizer(ctx, parent)
		}
		return result{}, nil
	}
	sel, extraLabels, err := r.selectorOf(parent)
	if err != nil {
		r.warn(parent, "InvalidSelector", err)
		return result{}, err
	}
	plan := r.plan(parent, sel)

	hookName, hook := "sync", r.cfg.Sync
	if deleting {
		hookName, hook = "finalize", r.cfg.Finalize
	}
	req := syncRequest(r.cfg.ControllerObject, parent, r.rules, plan.observed, r.hookVersion, deleting)
	resp, err := r.invoke(ctx, hookName, hook, req, parent)
	if err != nil {
		return result{}, err
	}
	parsed, err := parseResponse(resp, parent, r.rules, sel, extraLabels)
	if err != nil {
		r.cfg.Metrics.HookInvocations.WithLabelValues(r.name, hookName, hook.Form(), "invalid").Inc()
		r.warn(parent, "InvalidHookResponse", fmt.Errorf("%s hook: %w", hookName, err))
		return result{}, err
	}

	// The response is valid: from here on the engine writes.
	if !deleting && r.cfg.Finalize != nil && !hasFinalizer {
		if err := r.addFinalizer(ctx, parent); err != nil {
			return result{}, err
		}
	}
	if !deleting && r.cfg.Finalize == nil && hasFinalizer {
		if err := r.removeFinalizer(ctx, parent); err != nil {
			return result{}, err
		}
	}
	var errs []error
	owner := apply.OwnerRef(parent)
	lost := r.carryOutClaims(ctx, parent, owner, plan, &errs)
	owned := r.manageChildren(ctx, parent, owner, plan.observed, lost, parsed.children, &errs)
	if parsed.hasStatus {
		if err := r.writeStatus(ctx, parent, parsed.status); err != nil {
			errs = append(errs, fmt.Errorf("status: %w", err))
		}
	}
	if deleting && parsed.finalized && len(errs) == 0 {
		if err := r.removeFinalizer(ctx, parent); err != nil {
			errs = append(errs, err)
		}
	}
	r.countsMu.Lock()
	r.counts[key] = owned
	r.countsMu.Unlock()
	return result{resyncAfter: parsed.resyncAfter}, errors.Join(errs...)
}

// selectorOf returns the parent's child selector and the labels the engine adds to every
// child: the parent's spec.selector, or with generateSelector the UID label.
func (r *Runner) selectorOf(parent *unstructured.Unstructured) (labels.Selector, map[string]string, error) {
	if r.generateSelector() {
		l := map[string]string{ControllerUIDLabel: string(parent.GetUID())}
		return labels.SelectorFromSet(l), l, nil
	}
	sel, err := r.selectors.get(parent)
	return sel, nil, err
}

// parentSelector parses spec.selector. A parent without one selects nothing, so it would own
// no children: that is reported as an error instead.
func parentSelector(parent *unstructured.Unstructured) (labels.Selector, error) {
	m, found, err := unstructured.NestedMap(parent.Object, "spec", "selector")
	if err != nil || !found {
		return nil, errors.New("spec.selector is missing or not an object (set it, or use generateSelector)")
	}
	var ls metav1.LabelSelector
	if err := fromUnstructured(m, &ls); err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	sel, err := metav1LabelSelectorAsSelector(&ls)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	if sel.Empty() {
		return nil, errors.New("spec.selector is empty: it would select every object")
	}
	return sel, nil
}

// plan runs the decision table over the parent's owned children (ControllerUID index) and
// the orphans of its namespace (OrphanNamespace index). It writes nothing.
func (r *Runner) plan(parent *unstructured.Unstructured, sel labels.Selector) claimPlan {
	p := claim.ParentOf(parent, sel)
	plan := claimPlan{observed: map[int][]*unstructured.Unstructured{}}
	for i, rule := range r.rules {
		idx := rule.informer.Indexer()
		owned, _ := idx.ByIndex(index.ControllerUID, string(parent.GetUID()))
		orphanKey := parent.GetNamespace()
		if parent.GetNamespace() == "" && rule.Namespaced {
			orphanKey = index.AllNamespaces
		}
		orphans, _ := idx.ByIndex(index.OrphanNamespace, orphanKey)
		for _, list := range [][]any{owned, orphans} {
			for _, o := range list {
				child := o.(*unstructured.Unstructured)
				switch claim.Decide(p, claim.ChildOf(child)) {
				case claim.Keep:
					plan.observed[i] = append(plan.observed[i], child)
				case claim.Adopt:
					plan.observed[i] = append(plan.observed[i], child)
					plan.adopt = append(plan.adopt, pending{rule: i, obj: child})
				case claim.Release:
					plan.release = append(plan.release, pending{rule: i, obj: child})
				}
			}
		}
	}
	return plan
}

// carryOutClaims adopts and releases as planned. It returns the children whose adoption
// failed: another parent won them, or they changed; they are left alone this round.
func (r *Runner) carryOutClaims(ctx context.Context, parent *unstructured.Unstructured, owner metav1.OwnerReference,
	plan claimPlan, errs *[]error) map[*unstructured.Unstructured]bool {
	lost := map[*unstructured.Unstructured]bool{}
	if len(plan.adopt) > 0 {
		// Never adopt for a parent that is being deleted: confirm with a live read.
		if err := r.recheckParent(ctx, parent); err != nil {
			for _, a := range plan.adopt {
				lost[a.obj] = true
			}
			*errs = append(*errs, err)
			plan.adopt = nil
		}
	}
	for _, a := range plan.adopt {
		if _, err := r.applier().Adopt(ctx, r.applyResource(a.rule), owner, a.obj); err != nil {
			lost[a.obj] = true
			*errs = append(*errs, fmt.Errorf("adopting %s %s: %w", r.rules[a.rule].GVK.Kind, a.obj.GetName(), err))
			continue
		}
		r.cfg.Metrics.ChildOperations.WithLabelValues(r.name, "adopt").Inc()
	}
	for _, rel := range plan.release {
		if _, err := r.applier().Release(ctx, r.applyResource(rel.rule), parent.GetUID(), rel.obj); err != nil &&
			!errors.Is(err, apply.ErrGone) {
			*errs = append(*errs, fmt.Errorf("releasing %s %s: %w", r.rules[rel.rule].GVK.Kind, rel.obj.GetName(), err))
			continue
		}
		r.cfg.Metrics.ChildOperations.WithLabelValues(r.name, "release").Inc()
	}
	return lost
}

func (r *Runner) recheckParent(ctx context.Context, parent *unstructured.Unstructured) error {
	live, err := r.parentClient(parent).Get(ctx, parent.GetName(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("rechecking parent before adoption: %w", err)
	}
	if live.GetUID() != parent.GetUID() {
		return fmt.Errorf("parent was replaced (UID %s, cached %s); not adopting", live.GetUID(), parent.GetUID())
	}
	if live.GetDeletionTimestamp() != nil {
		return errors.New("parent is being deleted; not adopting")
	}
	return nil
}

// manageChildren applies every desired child and deletes every owned child the hook no
// longer returns, under each rule's update method. It returns how many children the parent
// owns afterwards.
func (r *Runner) manageChildren(ctx context.Context, parent *unstructured.Unstructured, owner metav1.OwnerReference,
	observed map[int][]*unstructured.Unstructured, lost map[*unstructured.Unstructured]bool,
	desired map[int][]*unstructured.Unstructured, errs *[]error) int {
	owned := 0
	for i, rule := range r.rules {
		res := r.applyResource(i)
		have := make(map[string]*unstructured.Unstructured, len(observed[i]))
		for _, o := range observed[i] {
			if lost[o] {
				continue
			}
			have[o.GetNamespace()+"/"+o.GetName()] = o
		}
		want := make(map[string]bool, len(desired[i]))
		for _, d := range desired[i] {
			k := d.GetNamespace() + "/" + d.GetName()
			want[k] = true
			obs := have[k]
			if obs == nil && r.foreign(rule, d, parent) {
				r.warn(parent, "ChildConflict", fmt.Errorf("%s %s exists and is controlled by another owner; leaving it alone",
					rule.GVK.Kind, k))
				continue
			}
			action, err := r.applier().Reconcile(ctx, res, owner, d, obs, rule.method)
			r.countAction(action)
			if err != nil {
				*errs = append(*errs, fmt.Errorf("%s %s: %w", rule.GVK.Kind, k, err))
			}
			owned++
		}
		for k, o := range have {
			if want[k] {
				continue
			}
			action, err := r.applier().Reconcile(ctx, res, owner, nil, o, rule.method)
			r.countAction(action)
			if err != nil && !errors.Is(err, apply.ErrGone) {
				*errs = append(*errs, fmt.Errorf("deleting %s %s: %w", rule.GVK.Kind, k, err))
			}
		}
	}
	return owned
}

// foreign reports whether an object with the desired child's name exists in the cache under
// another controller, which the engine must not touch.
func (r *Runner) foreign(rule childRule, d, parent *unstructured.Unstructured) bool {
	key := d.GetName()
	if rule.Namespaced {
		key = d.GetNamespace() + "/" + key
	}
	obj, exists, _ := rule.informer.Indexer().GetByKey(key)
	if !exists {
		return false
	}
	ref := index.ControllerRef(obj.(*unstructured.Unstructured))
	return ref != nil && ref.UID != parent.GetUID()
}

func (r *Runner) countAction(a apply.Action) {
	switch a {
	case apply.Created:
		r.cfg.Metrics.ChildOperations.WithLabelValues(r.name, "create").Inc()
	case apply.Updated:
		r.cfg.Metrics.ChildOperations.WithLabelValues(r.name, "update").Inc()
	case apply.Deleted:
		r.cfg.Metrics.ChildOperations.WithLabelValues(r.name, "delete").Inc()
	}
}

func (r *Runner) warn(parent *unstructured.Unstructured, reason string, err error) {
	r.cfg.Recorder.Event(parent, corev1.EventTypeWarning, reason, truncate(err.Error(), 1024))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
