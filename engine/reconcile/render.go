package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/index"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/related"
	"metascript.dev/metascript/engine/resources"
)

// Offline, a Runner that is never started reads observed state from objects its caller hands
// it (Observe) instead of informers, and Render makes one reconcile's decision over them
// without writing anything: what `metascript render` shows. Render runs the steps reconcile
// runs, in its order and with its functions (stageOf, the kind's Claimant and Ask, relatedOf,
// gather, decide, planChildren, newStatus), and stops where reconcile would send requests.

// Objects lists the observed objects of one resource: what an informer of it would hold.
type Objects func(gvr schema.GroupVersionResource) []*unstructured.Unstructured

// Observe has r read objects in place of informers, through indexers holding the engine's
// own indexes (those Start registers on the informers): its parents, children, inputs and,
// with a customize hook, the resources its rules name. Call it once, before Render, on a
// Runner that is never started; the objects are read-only from then on.
func (r *Runner) Observe(objects Objects) error {
	for i := range r.parents {
		idx, err := observedIndexer(objects(r.parents[i].GVR), r.cfg.Watches.ParentIndexes)
		if err != nil {
			return err
		}
		r.parents[i].indexer = idx
	}
	for i := range r.children {
		idx, err := observedIndexer(objects(r.children[i].GVR), index.RegisterChildIndexes)
		if err != nil {
			return err
		}
		r.children[i].indexer = idx
	}
	r.inputCaches = nil
	for _, in := range r.cfg.Watches.Inputs {
		idx, err := observedIndexer(objects(in.GVR), index.RegisterChildIndexes)
		if err != nil {
			return err
		}
		r.inputCaches = append(r.inputCaches, idx)
	}
	if r.built.Hooks["customize"] != nil {
		var mu sync.Mutex
		caches := map[schema.GroupVersionResource]cache.Indexer{}
		r.related = related.NewFixed[Request](r.cfg.Resolver, HookVersion(r.built.Declared.Hooks[r.primary]), RelatedReach(r.built),
			func(res resources.Resource) cache.Indexer {
				mu.Lock()
				defer mu.Unlock()
				if idx, ok := caches[res.GVR]; ok {
					return idx
				}
				idx, _ := observedIndexer(objects(res.GVR), nil) // no index to register: no error
				caches[res.GVR] = idx
				return idx
			})
	}
	return nil
}

// Parents are the resources of the parents r reconciles, in the order Render's res counts.
func (r *Runner) Parents() []ParentResource { return slices.Clone(r.cfg.Parents) }

// observedIndexer is an indexer like an informer's (keyed namespace/name, indexed by
// namespace) with the indexes register adds, holding objs.
func observedIndexer(objs []*unstructured.Unstructured, register func(index.Informer) error) (cache.Indexer, error) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if register != nil {
		if err := register(indexerIndexes{idx}); err != nil {
			return nil, err
		}
	}
	for _, o := range objs {
		if err := idx.Add(o); err != nil {
			return nil, err
		}
	}
	return idx, nil
}

// indexerIndexes adds the engine's indexes to an indexer as to an informer (index.Informer).
type indexerIndexes struct{ cache.Indexer }

func (i indexerIndexes) EnsureIndex(name string, fn cache.IndexFunc) error {
	if _, ok := i.GetIndexers()[name]; ok {
		return nil
	}
	return i.AddIndexers(cache.Indexers{name: fn})
}

// Rendering is what one reconcile of a parent would do: decided, not written.
type Rendering struct {
	// Acts is false when the engine leaves the parent alone; Skipped says why, and nothing
	// but the parent's finalizer may change.
	Acts    bool
	Skipped string
	// Hook is the hook the reconcile calls after customize: the kind's primary hook, or
	// finalize while Finalizing.
	Hook       string
	Finalizing bool
	// Related are the rules of the customize hook's answer, and RelatedObjects what they
	// select (the request's related map); both nil without a customize hook.
	Related        []related.Rule
	RelatedObjects map[string]any
	// Adopt are orphans the parent adopts (their ControllerRef set), Release children that
	// stopped matching its selector (their ControllerRef removed), before any child is written.
	Adopt, Release []Claimed
	// Children are the writes of the parent's children, and the children left as they are.
	Children []ChildWrite
	// Seen is the parent as the reconcile took it (see Render); Parent is the parent as the
	// engine would leave it: its status, decoration and finalizers written. ParentChanged
	// says whether that takes a write.
	Seen, Parent  *unstructured.Unstructured
	ParentChanged bool
	// Finalizer is "add" or "remove" when the reconcile changes the controller's finalizer.
	Finalizer string
	// ResyncAfter is when the parent asked to be reconciled again; zero for never.
	ResyncAfter time.Duration
	// Events are what the hooks asked to record on the parent (the engine records them
	// within a rate per parent).
	Events []protocol.Event
	// Retry is the failure the kind isolated (a MapController's failed map calls): the rest
	// stands, and the engine retries the parent with backoff.
	Retry error
	// Rejected are the answers of calls with About the kind found invalid.
	Rejected []Rejection
	// Prepared says the decision has writes the engine makes before any child (a rollout's
	// ControllerRevisions), which a rendering does not show.
	Prepared bool
}

// Claimed is an object a parent adopts or releases.
type Claimed struct {
	Resource resources.Resource
	Object   *unstructured.Unstructured
}

// ChildWrite is what the reconcile does to one child.
type ChildWrite struct {
	Rule protocol.ChildRule
	// Action is what apply.Send would do were the request to succeed: Created, Updated or
	// Deleted, or Unchanged and Skipped (no request).
	Action apply.Action
	// Object is the child as written (the configuration applied, or created as create
	// records it), or the observed child when deleted, unchanged or skipped.
	Object *unstructured.Unstructured
	// Observed is the child as observed; nil for a new one.
	Observed *unstructured.Unstructured
	// Err is why the child cannot be written (apply.Plan's error); Action is Unchanged then.
	Err error
}

// Render decides what one reconcile of parent, an object of Config.Parents[res], would do
// over the objects Observe gave, calling the hooks as reconcile does, and writes nothing.
//
// A parent being deleted is taken to hold the controller's finalizer when a finalize hook
// exists: the engine adds it when it first syncs the parent. An error is a failure that
// makes the engine write nothing: a *HookError for a hook that failed or answered invalidly
// (its Err then a *protocol.InvalidResponseError), or a parent whose selector is invalid.
func (r *Runner) Render(ctx context.Context, res int, parent *unstructured.Unstructured) (*Rendering, error) {
	prog := r.programOf(ctx)
	if parent.GetDeletionTimestamp() != nil && prog.Hooks["finalize"] != nil && !slices.Contains(parent.GetFinalizers(), r.finalizer) {
		parent = parent.DeepCopy()
		parent.SetFinalizers(append(parent.GetFinalizers(), r.finalizer))
	}
	out := &Rendering{Seen: parent, Parent: parent.DeepCopy()}
	st := r.stageOf(res, parent, prog)
	out.Hook, out.Finalizing = st.hook, st.finalizing
	if !st.act {
		out.Skipped = fmt.Sprintf("%s does not select it", r.name)
		if st.finalizing {
			out.Skipped = fmt.Sprintf("it is being deleted and %s has no finalize hook: the deletion proceeds", r.name)
		}
		if st.dropFinalizer {
			out.setFinalizer(r.finalizer, false)
		}
		return out, nil
	}
	out.Acts = true
	claimant, err := r.cfg.Kind.Claimant(parent)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.parents[res].Describe(parent), err)
	}
	rules, relatedMap, err := r.relatedOf(ctx, parent)
	if err != nil {
		return nil, asHookError("customize", err)
	}
	if r.related != nil {
		out.Related, out.RelatedObjects = rules, relatedMap
	}
	plan := r.gather(parent, claimant)
	d := &Gathered{Parent: parent, Resource: res, Hook: st.hook, Finalizing: st.finalizing, Observed: plan.observed,
		Inputs: r.inputIndexers(), Related: relatedMap}
	var decision *Outcome
	if st.cleanup {
		decision = r.cleanupOutcome(d)
	} else if decision, err = r.decide(ctx, d); err != nil {
		return nil, asHookError(st.hook, err)
	} else if st.finalizing {
		r.dropCleaned(parent, decision)
	}
	for _, a := range plan.adopt {
		out.Adopt = append(out.Adopt, Claimed{Resource: r.children[a.rule].Resource, Object: a.obj})
	}
	for _, rel := range plan.release {
		out.Release = append(out.Release, Claimed{Resource: r.children[rel.rule].Resource, Object: rel.obj})
	}
	key, _ := cache.MetaNamespaceKeyFunc(parent)
	ops, _ := r.planChildren(ctx, Request{Resource: res, Key: key}, parent, claimant, apply.OwnerRef(parent), plan.observed, nil, decision)
	for _, op := range ops {
		w := ChildWrite{Rule: r.children[op.rule].ChildRule, Observed: op.observed, Err: op.err, Action: apply.Unchanged, Object: op.observed}
		if op.err == nil {
			w.Action, w.Object = op.step.Planned()
		}
		out.Children = append(out.Children, w)
	}
	out.ResyncAfter, out.Retry, out.Rejected, out.Prepared = decision.ResyncAfter, decision.Retry, decision.Rejected, decision.Prepare != nil
	out.Events = decision.Events

	switch {
	case decision.Decoration != nil:
		if decorated, changed := apply.Decorated(out.Parent, apply.DecorationRecord(r.built.MarkName()), *decision.Decoration); changed {
			out.Parent, out.ParentChanged = decorated, true
		}
	case decision.Status != nil || len(decision.Conditions) > 0:
		if status, changed := r.newStatus(parent, decision); changed {
			out.Parent.Object["status"] = status
			out.ParentChanged = true
		}
	}
	switch {
	case !st.finalizing && (st.wantFinalizer || r.holdsForCleanup(parent, plan.observed, decision)) != st.hasFinalizer:
		out.setFinalizer(r.finalizer, !st.hasFinalizer)
	case st.finalizing && decision.Finalized && !r.cleaned(parent, plan.observed):
		out.setFinalizer(r.finalizer, false)
	}
	return out, nil
}

// setFinalizer adds or removes finalizer on the rendered parent.
func (out *Rendering) setFinalizer(finalizer string, add bool) {
	list := slices.DeleteFunc(slices.Clone(out.Parent.GetFinalizers()), func(f string) bool { return f == finalizer })
	out.Finalizer = "remove"
	if add {
		list, out.Finalizer = append(list, finalizer), "add"
	}
	out.Parent.SetFinalizers(list)
	out.ParentChanged = true
}

// asHookError is err as a *HookError of hook, unless it names its hook already.
func asHookError(hook string, err error) error {
	var he *HookError
	if errors.As(err, &he) {
		return err
	}
	return &HookError{Hook: hook, Err: err}
}
