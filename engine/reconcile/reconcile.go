package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/protocol"
)

// reconcile brings one parent to the state its hooks ask for, in the order the package
// comment gives. It reads only the cache, except for one live read of the parent before its
// first adoption. It returns when the parent asked to be reconciled again.
func (r *Runner) reconcile(ctx context.Context, req Request) (time.Duration, error) {
	if r.outside(req) {
		return 0, nil
	}
	obj, exists, err := r.parents[req.Resource].informer.Indexer().GetByKey(req.Key)
	if err != nil || !exists {
		return 0, err
	}
	parent := obj.(*unstructured.Unstructured)
	if written, ok := r.overlay.parentView(req, parent); ok {
		parent = written // the engine's own status write, which the cache has not seen yet
	}
	selected := r.cfg.Kind.Selects(req.Resource, parent)
	hasFinalizer := slices.Contains(parent.GetFinalizers(), r.finalizer)
	deleting := parent.GetDeletionTimestamp() != nil
	finalizing := deleting || !selected && hasFinalizer && r.built.Descriptor.FinalizeDeselected
	if !selected && !finalizing {
		return 0, nil
	}
	finalize := r.built.Hooks["finalize"]
	if finalizing && (finalize == nil || !hasFinalizer) {
		// No finalize hook (any more): let the deletion proceed, or leave the deselected
		// parent alone; the garbage collector removes children of deleted parents.
		if hasFinalizer {
			return 0, r.patchFinalizers(ctx, req.Resource, parent, false)
		}
		return 0, nil
	}

	// Gather.
	claimant, err := r.cfg.Kind.Claimant(parent)
	if err != nil {
		r.warn(parent, "InvalidSelector", err)
		return 0, err
	}
	if err := r.checkReads(ctx, req.Resource, parent); err != nil {
		r.warn(parent, "ReadRefused", err)
		return 0, err
	}
	rules, related, err := r.relatedOf(ctx, parent)
	if err != nil {
		return 0, err
	}
	hook := r.primary
	if finalizing {
		hook = "finalize"
	}

	// Decide and write, in rounds: a round that created or updated children is followed by
	// another decision that sees what the writes stored, so that the parent's own fields
	// (its status) are written once, from children as they are now. A round that changed
	// nothing, deleted, failed a write, or wrote revisions ends it.
	var errs writeErrors
	var out *Outcome
	var writes childWrites
	for round := 0; ; round++ {
		plan := r.gather(parent, claimant)
		d := &Gathered{Parent: parent, Resource: req.Resource, Hook: hook, Finalizing: finalizing, Observed: plan.observed,
			Inputs: r.inputIndexers(), Related: related}
		next, err := r.decide(ctx, d)
		if err != nil {
			if round == 0 {
				return 0, err // a failure here writes nothing
			}
			break // the earlier round's writes stand; its parent write follows
		}
		out = next
		if round == 0 {
			// The decision is valid: from here on the engine writes, and the related objects
			// that informed it are what the parent is bound to.
			if r.related != nil {
				r.related.Bind(req, rules)
			}
			if !finalizing && (finalize != nil) != hasFinalizer {
				if err := r.patchFinalizers(ctx, req.Resource, parent, finalize != nil); err != nil {
					return 0, err
				}
			}
		}
		if out.Prepare != nil {
			if err := out.Prepare(ctx); err != nil {
				return 0, err
			}
		}
		owner := apply.OwnerRef(parent)
		lost := r.writeClaims(ctx, req.Resource, parent, owner, plan, &errs)
		writes = r.manageChildren(ctx, req, parent, claimant, owner, plan.observed, lost, out, &errs)
		if writes.applied == 0 || writes.deleted > 0 || !errs.empty() || out.Prepare != nil || round == maxRounds-1 {
			break
		}
	}

	latest := parent
	r.overlay.beginParent(req)
	stored, err := r.writeParent(ctx, req.Resource, parent, out)
	if err != nil {
		errs.add(r.parents[req.Resource].Describe(parent), err)
	}
	if r.overlay.endParent(req, stored) {
		r.enqueue([]Request{req}) // someone else's change came while the write was in flight
	}
	if stored != nil {
		latest = stored
	}
	if finalizing && out.Finalized && errs.empty() {
		if err := r.patchFinalizers(ctx, req.Resource, latest, false); err != nil {
			errs.add(r.parents[req.Resource].Describe(parent), err)
		}
	}
	if out.Retry != nil {
		errs.transientErr(out.Retry)
	}
	r.setCount(req, writes.owned, false)
	r.recordHookEvents(latest, out.Events)
	if err := r.reportWrites(ctx, req.Resource, latest, &errs); err != nil {
		errs.add(r.parents[req.Resource].Describe(parent)+" status", err)
	}
	return out.ResyncAfter, errs.join()
}

// maxRounds bounds the decide-and-write rounds of one reconcile; a hook whose answers keep
// changing is then reconciled again by the events of its writes.
const maxRounds = 3

// decide asks the kind which hook calls d needs, makes them, and has the kind decide on the
// answers. Every failure is reported on the parent before it returns: a failed call by
// invoke, an invalid answer here.
func (r *Runner) decide(ctx context.Context, d *Gathered) (*Outcome, error) {
	asked, err := r.cfg.Kind.Ask(d)
	if err != nil {
		r.reject(d.Parent, d.Hook, "", err)
		return nil, err
	}
	calls := asked.Calls()
	answers := make([]Answer, len(calls))
	var alone []int // calls with About: made concurrently, each failing alone
	for i, c := range calls {
		if c.About != "" {
			alone = append(alone, i)
			continue
		}
		answers[i].Response, answers[i].Err = r.invoke(ctx, c.Hook, "", c.Request, d.Parent)
		if answers[i].Err != nil {
			return nil, answers[i].Err
		}
	}
	inParallel(len(alone), hookCallers, func(n int) {
		c := calls[alone[n]]
		answers[alone[n]].Response, answers[alone[n]].Err = r.invoke(ctx, c.Hook, c.About, c.Request, d.Parent)
	})
	out, err := asked.Decide(answers)
	if err != nil {
		r.reject(d.Parent, d.Hook, "", err)
		return nil, err
	}
	for _, rej := range out.Rejected {
		r.reject(d.Parent, rej.Hook, rej.About, rej.Err)
	}
	return out, nil
}

// hookCallers bounds the calls of one parent's hooks made at once (a MapController's map
// calls, one per input).
const hookCallers = 8

// reject reports an invalid answer of hook (about names what it was called for, if anything):
// an invalid invocation in the metrics and an InvalidHookResponse Warning Event. Other errors
// are not the hook's answer and were reported where they happened.
func (r *Runner) reject(parent *unstructured.Unstructured, hook, about string, err error) {
	var invalid *protocol.InvalidResponseError
	if !errors.As(err, &invalid) {
		return
	}
	r.cfg.Metrics.HookInvocations.WithLabelValues(r.name, hook, r.built.Hooks[hook].Form(), "invalid").Inc()
	r.warn(parent, "InvalidHookResponse", fmt.Errorf("%s hook%s: %w", hook, aboutSuffix(about), err))
}

func (r *Runner) inputIndexers() []cache.Indexer {
	if len(r.inputs) == 0 {
		return nil
	}
	out := make([]cache.Indexer, len(r.inputs))
	for i, inf := range r.inputs {
		out[i] = inf.Indexer()
	}
	return out
}
