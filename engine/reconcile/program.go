package reconcile

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/rollout"
)

// Program is one revision of a controller's hooks, built: immutable, and shared by every
// reconcile that runs it.
type Program struct {
	Revision string
	Hooks    map[string]hooks.Invoker
	// quiet programs record no Event: a dry run's rendering writes nothing at all.
	quiet bool
}

// Staging is what a Runner needs of a staged hook change (*rollout.Rollout is one): which
// parents run the changed hooks, and where each outcome goes. Its methods are called
// concurrently from reconciles.
type Staging interface {
	// Candidate reports whether the parent runs the changed hooks.
	Candidate(uid types.UID) bool
	// DryRun reports whether the changed hooks are only rendered, every parent running the
	// previous ones.
	DryRun() bool
	// MaxDeletes bounds the deletions of one sync on the changed hooks; negative: none.
	MaxDeletes() int
	// Synced records the outcome of a sync on the changed hooks: nil, or why it failed.
	Synced(p rollout.Parent, err error)
	// Rendered records what the changed hooks would write for a parent in a dry run.
	Rendered(p rollout.Parent, plan rollout.Planned, err error)
}

// Stage names revision the controller's hooks (Built.Hooks) and, with a staging, has the
// runner run the parents the staging does not move with previous instead, and report to it.
// Call it before Start, or not at all: without it every parent runs Built.Hooks.
func (r *Runner) Stage(revision string, previous *Program, s Staging) {
	r.program.Revision, r.previous, r.staging = revision, previous, s
}

// StagedParents lists the parents the controller selects, for a staged change's Advance.
// It looks up every selected parent: the rollout's driver calls it, never an event path.
func (r *Runner) StagedParents() []rollout.Parent {
	r.countsMu.Lock()
	reqs := make([]Request, 0, len(r.selected))
	for req := range r.selected {
		reqs = append(reqs, req)
	}
	r.countsMu.Unlock()
	out := make([]rollout.Parent, 0, len(reqs))
	for _, req := range reqs {
		if obj, ok, _ := r.parents[req.Resource].indexer.GetByKey(req.Key); ok {
			out = append(out, stagedParent(obj.(*unstructured.Unstructured)))
		}
	}
	return out
}

// programKey is the context key of the program a reconcile runs.
type programKey struct{}

// withProgram is ctx with the program every hook call under it makes.
func withProgram(ctx context.Context, p *Program) context.Context {
	return context.WithValue(ctx, programKey{}, p)
}

// programOf is the program the calls under ctx run: the one withProgram set, else the
// controller's.
func (r *Runner) programOf(ctx context.Context) *Program {
	if p, ok := ctx.Value(programKey{}).(*Program); ok {
		return p
	}
	return r.program
}

// hooksOf is the hooks the calls under ctx make.
func (r *Runner) hooksOf(ctx context.Context) map[string]hooks.Invoker { return r.programOf(ctx).Hooks }

// quiet reports whether the calls under ctx record no Event.
func quiet(ctx context.Context) bool {
	p, ok := ctx.Value(programKey{}).(*Program)
	return ok && p.quiet
}

// programFor is the program a reconcile of parent runs, and whether it is the changed hooks
// of a staged change (its outcome is then reported).
func (r *Runner) programFor(parent *unstructured.Unstructured) (*Program, bool) {
	if r.staging == nil {
		return r.program, false
	}
	if r.staging.Candidate(parent.GetUID()) {
		return r.program, true
	}
	return r.previous, false
}

// stagedParent names parent for the staging.
func stagedParent(parent *unstructured.Unstructured) rollout.Parent {
	return rollout.Parent{UID: parent.GetUID(), Name: cacheKey(parent)}
}

// DeleteBoundError is a sync on changed hooks that would delete more children than the
// rollout policy allows: it writes nothing.
type DeleteBoundError struct {
	Deletes, Bound int
}

func (e *DeleteBoundError) Error() string {
	return fmt.Sprintf("the changed hooks would delete %d children in one sync; spec.hookRollout.maxDeletesPerSync allows %d",
		e.Deletes, e.Bound)
}

// deletions counts the claimed children out no longer asks for and does not leave
// untouched: those a reconcile deciding out deletes.
func (r *Runner) deletions(observed map[int][]*unstructured.Unstructured, out *Outcome) int {
	n := 0
	for i := range r.children {
		want := make(map[string]bool, len(out.Children[i]))
		for _, d := range out.Children[i] {
			want[d.GetNamespace()+"/"+d.GetName()] = true
		}
		for _, o := range observed[i] {
			if !out.Untouched[o] && !want[o.GetNamespace()+"/"+o.GetName()] {
				n++
			}
		}
	}
	return n
}

// checkDeletes refuses a decision on the changed hooks that deletes more children than the
// staging allows, with a DeleteBoundExceeded Warning Event on the parent.
func (r *Runner) checkDeletes(parent *unstructured.Unstructured, observed map[int][]*unstructured.Unstructured, out *Outcome) error {
	bound := r.staging.MaxDeletes()
	if bound < 0 {
		return nil
	}
	if n := r.deletions(observed, out); n > bound {
		err := &DeleteBoundError{Deletes: n, Bound: bound}
		r.warn(parent, "DeleteBoundExceeded", err)
		return err
	}
	return nil
}

// reportStaged tells the staging how a reconcile of parent that wrote went: for a parent on
// the changed hooks, its outcome (a write the API server refused fails it; one that lost a
// race to a newer state tells nothing), and in a dry run what the changed hooks would write.
func (r *Runner) reportStaged(ctx context.Context, req Request, parent *unstructured.Unstructured, candidate bool, errs *writeErrors) {
	switch {
	case r.staging == nil:
	case candidate && len(errs.refused) > 0:
		r.staging.Synced(stagedParent(parent), (&writeErrors{refused: errs.refused}).join())
	case candidate && len(errs.transient) == 0:
		r.staging.Synced(stagedParent(parent), nil)
	case !candidate && r.staging.DryRun():
		plan, err := r.renderChanged(ctx, req, parent)
		r.staging.Rendered(stagedParent(parent), plan, err)
	}
}

// renderChanged renders what the changed hooks would write for parent, quietly: no Event, no
// write of any kind.
func (r *Runner) renderChanged(ctx context.Context, req Request, parent *unstructured.Unstructured) (rollout.Planned, error) {
	dry := *r.program
	dry.quiet = true
	out, err := r.Render(withProgram(ctx, &dry), req.Resource, parent)
	if err != nil {
		return rollout.Planned{}, err
	}
	plan := rollout.Planned{StatusChanged: out.ParentChanged}
	for _, w := range out.Children {
		switch w.Action {
		case apply.Created:
			plan.Creates++
		case apply.Updated:
			plan.Updates++
		case apply.Deleted:
			plan.Deletes++
		}
	}
	return plan, nil
}
