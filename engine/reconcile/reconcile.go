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
	obj, exists, err := r.parents[req.Resource].indexer.GetByKey(req.Key)
	if err != nil || !exists {
		return 0, err
	}
	parent := obj.(*unstructured.Unstructured)
	if written, ok := r.overlay.parentView(req, parent); ok {
		parent = written // the engine's own status write, which the cache has not seen yet
	}
	prog, candidate := r.programFor(parent)
	if r.staging != nil {
		ctx = withProgram(ctx, prog) // else programOf falls back to r.program: no context per reconcile
	}
	st := r.stageOf(req.Resource, parent, prog)
	if st.act && st.finalizing {
		if abandoned, err := r.abandon(ctx, req.Resource, parent); abandoned {
			return 0, err
		}
	}
	if !st.act {
		if st.dropFinalizer {
			if err := r.patchFinalizers(ctx, req.Resource, parent, false); err != nil {
				return 0, r.stoppedBy(ctx, req.Resource, parent, r.parents[req.Resource].Describe(parent), err)
			}
		}
		return 0, nil
	}
	finalizing, hook := st.finalizing, st.hook

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

	// Decide and write, in rounds: a round that created or updated children is followed by
	// another decision that sees what the writes stored, so that the parent's own fields
	// (its status) are written once, from children as they are now. A round that changed
	// nothing, deleted, failed a write, or wrote revisions ends it.
	var errs writeErrors
	var out *Outcome
	var writes childWrites
	var observed map[int][]*unstructured.Unstructured // the last round's, for cleanup
	for round := 0; ; round++ {
		plan := r.gather(parent, claimant)
		observed = plan.observed
		d := &Gathered{Parent: parent, Resource: req.Resource, Hook: hook, Finalizing: finalizing, Observed: plan.observed,
			Inputs: r.inputIndexers(), Related: related}
		var next *Outcome
		var err error
		if st.cleanup {
			next = r.cleanupOutcome(d)
		} else if next, err = r.decide(ctx, d); err == nil && finalizing {
			r.dropCleaned(parent, next)
		}
		if err == nil && round == 0 && candidate && !st.cleanup {
			err = r.checkDeletes(parent, plan.observed, next)
		}
		if err != nil {
			if round == 0 {
				if candidate {
					r.staging.Synced(stagedParent(parent), err)
				}
				return 0, err // a failure here writes nothing
			}
			break // the earlier round's writes stand; its parent write follows
		}
		out = next
		if round == 0 && r.related != nil {
			// The decision is valid: from here on the engine writes, and the related objects
			// that informed it are what the parent is bound to.
			r.related.Bind(req, rules)
		}
		// The finalizer is added before the first child that needs it is written, which may
		// be in a later round (a child that waited for one this reconcile created), and
		// removed only in the first.
		if want := st.wantFinalizer || r.holdsForCleanup(parent, plan.observed, out); !finalizing && want != st.hasFinalizer && (round == 0 || want) {
			stored, err := r.patchFinalizersTo(ctx, req.Resource, parent, want)
			if err != nil {
				if round == 0 {
					return 0, r.stoppedBy(ctx, req.Resource, parent, r.parents[req.Resource].Describe(parent), err)
				}
				errs.add(r.parents[req.Resource].Describe(parent), err)
				break // the earlier round's writes stand; its parent write follows
			}
			st.hasFinalizer = want
			if stored != nil {
				// The next rounds read the parent as it is now, as the cache holds it.
				unstructured.RemoveNestedField(stored.Object, "metadata", "managedFields")
				parent = stored
			}
		}
		if out.Prepare != nil {
			if err := out.Prepare(ctx); err != nil {
				return 0, r.stoppedBy(ctx, req.Resource, parent, "ControllerRevisions of "+r.parents[req.Resource].Describe(parent), err)
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
		r.enqueue("a change during the engine's write", []Request{req}) // someone else's change came while the write was in flight
	}
	if stored != nil {
		latest = stored
	}
	if finalizing && out.Finalized && errs.empty() && !r.cleaned(parent, observed) {
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
	r.reportStaged(ctx, req, parent, candidate, &errs)
	return out.ResyncAfter, errs.join()
}

// stage is what a reconcile does with a parent, decided from the parent alone.
type stage struct {
	// act: gather, decide and write. Otherwise the parent is left alone, after its finalizer
	// is removed when dropFinalizer (finalizing without a finalize hook: the deletion
	// proceeds, and the garbage collector removes the children of a deleted parent).
	act, dropFinalizer bool
	// hasFinalizer: the parent holds the controller's finalizer; wantFinalizer: it should
	// while it is not finalizing (a finalize hook exists; a Cleaner's parent may want it for
	// cleanup too, decided once its children are known).
	hasFinalizer, wantFinalizer bool
	finalizing                  bool
	// cleanup: finalizing without a finalize hook, holding the finalizer for a Cleaner's
	// children: no hook is called (cleanupOutcome).
	cleanup bool
	// hook is the hook to call: the kind's primary hook, or finalize while finalizing; none
	// in cleanup.
	hook string
}

// stageOf decides what a reconcile does with parent, an object of Config.Parents[res]: a
// parent the controller does not select is left alone, unless it still holds the finalizer
// of a kind that finalizes deselected parents (FinalizeDeselected); a parent being deleted
// is finalized while it holds the finalizer and a finalize hook exists, and cleaned up
// (Cleaner) while it holds the finalizer without one.
func (r *Runner) stageOf(res int, parent *unstructured.Unstructured, prog *Program) stage {
	selected := r.cfg.Kind.Selects(res, parent)
	st := stage{hasFinalizer: slices.Contains(parent.GetFinalizers(), r.finalizer), wantFinalizer: prog.Hooks["finalize"] != nil,
		hook: r.primary}
	st.finalizing = parent.GetDeletionTimestamp() != nil || !selected && st.hasFinalizer && r.built.Descriptor.FinalizeDeselected
	switch {
	case r.removing.Load() != nil && !st.finalizing:
		st.dropFinalizer = st.hasFinalizer // the controller is going: release, call nothing
	case !selected && !st.finalizing:
	case st.finalizing && st.hasFinalizer && !st.wantFinalizer && r.cleaner() != nil:
		st.act, st.cleanup = true, true // delete the children the garbage collector cannot
	case st.finalizing && (!st.wantFinalizer || !st.hasFinalizer):
		st.dropFinalizer = st.hasFinalizer
	default:
		st.act = true
	}
	switch {
	case st.cleanup:
		st.hook = ""
	case st.finalizing:
		st.hook = "finalize"
	}
	return st
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
		r.reject(ctx, d.Parent, d.Hook, "", err)
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
	if len(alone) > 0 { // else no closure to allocate
		inParallel(len(alone), hookCallers, func(n int) {
			c := calls[alone[n]]
			answers[alone[n]].Response, answers[alone[n]].Err = r.invoke(ctx, c.Hook, c.About, c.Request, d.Parent)
		})
	}
	out, err := asked.Decide(answers)
	if err != nil {
		r.reject(ctx, d.Parent, d.Hook, "", err)
		return nil, err
	}
	for _, rej := range out.Rejected {
		r.reject(ctx, d.Parent, rej.Hook, rej.About, rej.Err)
	}
	return out, nil
}

// hookCallers bounds the calls of one parent's hooks made at once (a MapController's map
// calls, one per input).
const hookCallers = 8

// reject reports an invalid answer of hook (about names what it was called for, if anything):
// an invalid invocation in the metrics and an InvalidHookResponse Warning Event. Other errors
// are not the hook's answer and were reported where they happened.
func (r *Runner) reject(ctx context.Context, parent *unstructured.Unstructured, hook, about string, err error) {
	var invalid *protocol.InvalidResponseError
	if !errors.As(err, &invalid) {
		return
	}
	r.cfg.Metrics.HookInvocations.WithLabelValues(r.name, hook, r.hooksOf(ctx)[hook].Form(), "invalid").Inc()
	if !quiet(ctx) {
		r.warn(parent, "InvalidHookResponse", fmt.Errorf("%s hook%s: %w", hook, aboutSuffix(about), err))
	}
}

func (r *Runner) inputIndexers() []cache.Indexer { return r.inputCaches }
