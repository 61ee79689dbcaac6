package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/index"
	"metascript.dev/metascript/engine/trace"
)

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

// gather runs the decision table over the parent's controlled children (ControllerUID
// index), when it adopts the orphans of its namespace (OrphanNamespace index), and when it
// claims beyond its namespace the children labelled with its UID (ParentUID index), and adds
// the children the engine wrote that the cache does not hold yet. It writes nothing.
//
// The written children are listed before the index is read: a child whose creation reaches
// the cache between the two reads is then either among the candidates or looked up again by
// name, never missed (a missed child would look like someone else's object under its name).
func (r *Runner) gather(parent *unstructured.Unstructured, p claim.Parent) claimPlan {
	plan := claimPlan{observed: map[int][]*unstructured.Unstructured{}}
	for i, rule := range r.children {
		r.gatherRule(&plan, i, rule.Namespaced, rule.indexer, parent, p)
	}
	return plan
}

// gatherRule is gather for child rule i, whose objects idx holds.
func (r *Runner) gatherRule(plan *claimPlan, i int, namespaced bool, idx cache.Indexer, parent *unstructured.Unstructured, p claim.Parent) {
	written := r.overlay.written(parent.GetUID(), i)
	candidates, _ := idx.ByIndex(index.ControllerUID, string(parent.GetUID()))
	if p.Adopts() {
		orphanKey := parent.GetNamespace()
		if orphanKey == "" && namespaced {
			orphanKey = index.AllNamespaces
		}
		orphans, _ := idx.ByIndex(index.OrphanNamespace, orphanKey)
		candidates = append(candidates, orphans...)
	}
	if p.Beyond != nil { // the children beyond its namespace, claimed by label
		labelled, _ := idx.ByIndex(index.ParentUID, string(parent.GetUID()))
		candidates = append(candidates, labelled...)
	}
	if n := len(candidates) + len(written); n > 0 {
		plan.observed[i] = make([]*unstructured.Unstructured, 0, n)
	}
	var seen map[string]bool // names of the candidates, when there are written children to match
	if len(written) > 0 {
		seen = make(map[string]bool, len(candidates))
	}
	for _, o := range candidates {
		child := o.(*unstructured.Unstructured)
		if seen != nil {
			seen[child.GetNamespace()+"/"+child.GetName()] = true
		}
		r.claimChild(plan, i, idx, parent, p, child, true)
	}
	for _, w := range written {
		if seen[w.GetNamespace()+"/"+w.GetName()] {
			continue
		}
		if cached, ok, _ := idx.GetByKey(cacheKey(w)); ok {
			// It reached the cache since the index was read: keep it if it is the parent's,
			// but claim nothing on so late a sight.
			r.claimChild(plan, i, idx, parent, p, cached.(*unstructured.Unstructured), false)
			continue
		}
		plan.observed[i] = append(plan.observed[i], w)
	}
}

// claimChild adds child to plan as the decision table says; only Keep when claims is false.
func (r *Runner) claimChild(plan *claimPlan, rule int, idx cache.Indexer, parent *unstructured.Unstructured, p claim.Parent,
	child *unstructured.Unstructured, claims bool) {
	switch d := claim.Decide(p, claim.ChildOf(child)); {
	case d == claim.Keep:
		// The engine's own write of it, when the cache has not seen that yet. Else the
		// cache's latest: the echo of that write may have reached the cache, and ended the
		// write's entry, after the index was read.
		if written, ok := r.overlay.view(rule, parent.GetUID(), child.GetNamespace(), child.GetName(), child); ok {
			child = written
		} else if latest := latestOf(idx, child); latest != nil && claim.Decide(p, claim.ChildOf(latest)) == claim.Keep {
			child = latest
		}
		plan.observed[rule] = append(plan.observed[rule], child)
	case d == claim.Adopt && claims:
		plan.observed[rule] = append(plan.observed[rule], child)
		plan.adopt = append(plan.adopt, pending{rule: rule, obj: child})
	case d == claim.Release && claims:
		plan.release = append(plan.release, pending{rule: rule, obj: child})
	}
}

// latestOf returns the object idx holds now under child's name, if it is child at a newer
// resourceVersion; else nil.
func latestOf(idx cache.Indexer, child *unstructured.Unstructured) *unstructured.Unstructured {
	obj, ok, _ := idx.GetByKey(cacheKey(child))
	if !ok {
		return nil
	}
	if u := obj.(*unstructured.Unstructured); u != child && older(child, u) {
		return u
	}
	return nil
}

// cacheKey is the key an informer's cache holds obj under: namespace/name, or name when obj
// has no namespace (cache.MetaNamespaceKeyFunc's, without its error).
func cacheKey(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}

// writeClaims adopts and releases as planned. It returns the children whose adoption
// failed: another parent won them, or they changed; they are left alone this round.
func (r *Runner) writeClaims(ctx context.Context, res int, parent *unstructured.Unstructured, owner metav1.OwnerReference,
	plan claimPlan, errs *writeErrors) map[*unstructured.Unstructured]bool {
	lost := map[*unstructured.Unstructured]bool{}
	if len(plan.adopt) > 0 {
		// Never adopt for a parent that is being deleted: confirm with a live read.
		if err := r.recheckParent(ctx, res, parent); err != nil {
			for _, a := range plan.adopt {
				lost[a.obj] = true
			}
			errs.transientErr(err)
			plan.adopt = nil
		}
	}
	for _, a := range plan.adopt {
		_, err := r.apply.Adopt(ctx, r.applyResource(a.rule), owner, a.obj)
		trace.SpanOf(ctx).Write("adopt", r.children[a.rule].Describe(a.obj), err)
		if err != nil {
			lost[a.obj] = true
			errs.add(r.children[a.rule].Describe(a.obj)+" (adopting)", err)
			continue
		}
		r.cfg.Metrics.ChildOperations.WithLabelValues(r.name, "adopt").Inc()
	}
	for _, rel := range plan.release {
		_, err := r.apply.Release(ctx, r.applyResource(rel.rule), parent.GetUID(), rel.obj)
		trace.SpanOf(ctx).Write("release", r.children[rel.rule].Describe(rel.obj), err)
		if err != nil && !errors.Is(err, apply.ErrGone) {
			errs.add(r.children[rel.rule].Describe(rel.obj)+" (releasing)", err)
			continue
		}
		r.cfg.Metrics.ChildOperations.WithLabelValues(r.name, "release").Inc()
	}
	return lost
}

// childWriters bounds the writes one reconcile makes at once: a parent with many children
// (a MapController's outputs) is not written one request after the other, while the client's
// QPS still bounds the whole engine.
const childWriters = 8

// childOp is one write of manageChildren: apply desired (over observed, if any), or delete
// observed when desired is nil; step is how, as apply.Plan decided it from the cache, or err
// why it cannot be written.
type childOp struct {
	rule              int
	desired, observed *unstructured.Unstructured
	step              apply.Step
	err               error
}

// planChildren decides, from the cache alone, the writes that make the parent's children
// what out asks: apply every desired child, delete every claimed child the hook no longer
// returns and did not ask to leave untouched, each under its rule's update method. A desired
// child whose name another holds is left out and reported (ChildConflict). It writes
// nothing, and returns the writes and how many children the parent claims afterwards.
func (r *Runner) planChildren(ctx context.Context, req Request, parent *unstructured.Unstructured, claimant claim.Parent,
	owner metav1.OwnerReference, observed map[int][]*unstructured.Unstructured, lost map[*unstructured.Unstructured]bool,
	out *Outcome) ([]childOp, int) {
	owned, n := 0, 0
	for i := range r.children {
		n += len(out.Children[i])
	}
	ops := takeOps(n) // deletions, rare, may add to it
	for i := range r.children {
		have := newClaimedChildren(observed[i], func(o *unstructured.Unstructured) bool { return lost[o] || out.Untouched[o] })
		for _, o := range observed[i] {
			if !lost[o] && out.Untouched[o] {
				owned++
			}
		}
		for _, d := range out.Children[i] {
			ns, name := nameOf(d)
			obs := have.want(ns, name)
			if obs == nil {
				if other := r.foreign(i, d, claimant); other != "" && quiet(ctx) {
					continue // a dry run's rendering: no Event, no wait
				} else if other != "" {
					r.warn(parent, "ChildConflict", fmt.Errorf("%s exists and belongs to %s; leaving it alone",
						r.children[i].Describe(d), other))
					r.waitFor(i, ns, name, req)
					continue
				}
			}
			ops = append(ops, childOp{rule: i, desired: d, observed: obs})
			owned++
		}
		for _, o := range have.unwanted() {
			ops = append(ops, childOp{rule: i, observed: o}) // in observed order, so that plans repeat
		}
	}
	for n := range ops {
		op := &ops[n]
		obj := op.desired
		if obj == nil {
			obj = op.observed
		}
		op.err = apply.PlanInto(&op.step, r.applyResource(op.rule), ownerFor(parent, owner, obj.GetNamespace()), op.desired, op.observed,
			r.children[op.rule].Method)
	}
	return ops, owned
}

// opSlices recycles the ops of planChildren, which every reconcile plans, once
// manageChildren is done with them.
var opSlices = sync.Pool{New: func() any { return new([]childOp) }}

// takeOps returns an empty slice of ops with room for n, from the pool.
func takeOps(n int) []childOp {
	p := opSlices.Get().(*[]childOp)
	ops := (*p)[:0]
	*p = nil
	opSlices.Put(p)
	if cap(ops) < n {
		ops = make([]childOp, 0, n)
	}
	return ops
}

// releaseOps returns ops to the pool; nothing may use them afterwards.
func releaseOps(ops []childOp) {
	if cap(ops) > maxPooledOps {
		return
	}
	clear(ops[:cap(ops)]) // hold no objects
	p := opSlices.Get().(*[]childOp)
	*p = ops[:0]
	opSlices.Put(p)
}

// maxPooledOps bounds the ops slices kept for reuse.
const maxPooledOps = 256

// claimedChildren are one rule's claimed children that planChildren may write, found by
// namespace and name: of several of one name, the last. A few are searched in order, as
// most parents have a few children; many through a map.
type claimedChildren struct {
	objs   []*unstructured.Unstructured
	state  []childState // by index of objs
	byName map[childName]int
}

type childState uint8

const (
	writable childState = iota
	excluded            // lost, or to be left untouched: never written
	wanted              // desired by the hook
)

type childName struct{ namespace, name string }

// claimedSearchMax is the most children searched in order.
const claimedSearchMax = 16

// newClaimedChildren indexes objs, leaving out those exclude reports.
func newClaimedChildren(objs []*unstructured.Unstructured, exclude func(*unstructured.Unstructured) bool) claimedChildren {
	c := claimedChildren{objs: objs, state: make([]childState, len(objs))}
	for j, o := range objs {
		if exclude(o) {
			c.state[j] = excluded
		}
	}
	if len(objs) > claimedSearchMax {
		c.byName = make(map[childName]int, len(objs))
		for j, o := range objs {
			if c.state[j] != excluded {
				ns, name := nameOf(o)
				c.byName[childName{ns, name}] = j
			}
		}
	}
	return c
}

// find returns the index of the writable child named namespace/name, or -1.
func (c *claimedChildren) find(namespace, name string) int {
	if c.byName != nil {
		if j, ok := c.byName[childName{namespace, name}]; ok {
			return j
		}
		return -1
	}
	for j := len(c.objs) - 1; j >= 0; j-- {
		if c.state[j] == excluded {
			continue
		}
		if ns, n := nameOf(c.objs[j]); n == name && ns == namespace {
			return j
		}
	}
	return -1
}

// want marks the child named namespace/name as desired and returns it; nil when there is
// none to write.
func (c *claimedChildren) want(namespace, name string) *unstructured.Unstructured {
	j := c.find(namespace, name)
	if j < 0 {
		return nil
	}
	c.state[j] = wanted
	return c.objs[j]
}

// unwanted lists, in order, the writable children no want asked for.
func (c *claimedChildren) unwanted() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for j, o := range c.objs {
		if c.state[j] != writable {
			continue
		}
		if ns, name := nameOf(o); c.find(ns, name) == j { // not hidden by a later one of its name
			out = append(out, o)
		}
	}
	return out
}

// nameOf returns obj's namespace and name, read in place.
func nameOf(obj *unstructured.Unstructured) (namespace, name string) {
	meta, _ := obj.Object["metadata"].(map[string]any)
	namespace, _ = meta["namespace"].(string)
	name, _ = meta["name"].(string)
	return namespace, name
}

// manageChildren makes the writes planChildren decides, only those that need a request, at
// most childWriters at once. It returns how many children the parent claims afterwards, and
// how many it applied and deleted.
func (r *Runner) manageChildren(ctx context.Context, req Request, parent *unstructured.Unstructured, claimant claim.Parent,
	owner metav1.OwnerReference, observed map[int][]*unstructured.Unstructured, lost map[*unstructured.Unstructured]bool,
	out *Outcome, errs *writeErrors) (result childWrites) {
	ops, owned := r.planChildren(ctx, req, parent, claimant, owner, observed, lost, out)
	defer releaseOps(ops)
	result.owned = owned
	// Every child was decided from the cache first; only the children that need a request are
	// written, up to childWriters at a time.
	var writes []int
	for n := range ops {
		op := &ops[n]
		if op.err != nil {
			r.countAction(apply.Unchanged)
			r.childFailed(errs, op, op.err)
			continue
		}
		if action, _, done := op.step.Done(); done {
			r.countAction(action)
			continue
		}
		writes = append(writes, n)
	}
	var stored []*unstructured.Unstructured // by index of ops, once written
	if len(writes) > 0 {
		stored = r.writeChildren(ctx, req, parent, ops, writes, errs, &result)
	}
	if out.Written != nil {
		written := make(map[*unstructured.Unstructured]*unstructured.Unstructured, len(ops))
		for n, op := range ops {
			if op.desired == nil {
				continue
			}
			switch _, now, done := op.step.Done(); {
			case done:
				written[op.desired] = now
			case stored != nil:
				written[op.desired] = stored[n]
			default:
				written[op.desired] = nil
			}
		}
		out.Written(written)
	}
	return result
}

// writeChildren sends the requests of the ops writes names, up to childWriters at once, and
// counts in result what they did. It returns what each stored, by index of ops.
func (r *Runner) writeChildren(ctx context.Context, req Request, parent *unstructured.Unstructured, ops []childOp, writes []int,
	errs *writeErrors, result *childWrites) []*unstructured.Unstructured {
	stored := make([]*unstructured.Unstructured, len(ops))
	actions := make([]apply.Action, len(ops))
	var mu sync.Mutex      // guards failed
	var failed writeErrors // added to errs at the end: errs stays the caller's, on its stack
	inParallel(len(writes), childWriters, func(i int) {
		n := writes[i]
		op := &ops[n]
		obj := op.desired
		if obj == nil {
			obj = op.observed
		}
		r.overlay.beginChild(op.rule, obj.GetNamespace(), obj.GetName())
		action, now, err := r.apply.Send(ctx, &op.step)
		if err != nil && op.observed == nil && op.desired != nil && apierrors.IsAlreadyExists(err) {
			r.nameHeld(op.rule, op.desired)
		}
		if span := trace.SpanOf(ctx); span != nil {
			span.Write(writeName(action, op.desired == nil, err), r.children[op.rule].Describe(obj), err)
		}
		r.countAction(action)
		stored[n] = now
		actions[n] = action
		var written *unstructured.Unstructured
		if action == apply.Created || action == apply.Updated {
			written = now
		}
		if r.overlay.endChild(op.rule, obj.GetNamespace(), obj.GetName(), parent.GetUID(), written) {
			r.enqueue("a change during the engine's write", []Request{req}) // someone else's change came while the write was in flight
		}
		mu.Lock()
		defer mu.Unlock()
		r.childFailed(&failed, op, err)
	})
	errs.refused = append(errs.refused, failed.refused...)
	errs.transient = append(errs.transient, failed.transient...)
	for _, a := range actions {
		switch a {
		case apply.Created, apply.Updated:
			result.applied++
		case apply.Deleted:
			result.deleted++
		}
	}
	return stored
}

// childFailed adds a failed write of op to errs, unless it is the delete of a child already
// gone.
func (r *Runner) childFailed(errs *writeErrors, op *childOp, err error) {
	if err == nil || op.desired == nil && errors.Is(err, apply.ErrGone) {
		return
	}
	if op.desired == nil {
		errs.add(r.children[op.rule].Describe(op.observed)+" (deleting)", err)
	} else {
		errs.add(r.children[op.rule].Describe(op.desired), err)
	}
}

// childWrites is what manageChildren did.
type childWrites struct {
	owned, applied, deleted int
}

// foreign returns who holds an object that exists in the cache under the desired child's
// name but is not among the parent's claimed children: another controller's child, another
// controller's child of a parent that claims by mark, or an object no controller owns that
// the parent did not adopt (its labels do not match the parent's selector). The engine
// leaves such an object alone. It returns "" when the name is free, or holds the parent's
// own child.
func (r *Runner) foreign(rule int, d *unstructured.Unstructured, claimant claim.Parent) string {
	obj, exists, _ := r.children[rule].indexer.GetByKey(cacheKey(d))
	if !exists {
		return ""
	}
	u := obj.(*unstructured.Unstructured)
	ref := index.ControllerRef(u)
	if ref == nil && claimant.Beyond != nil && claim.Outside(claimant.Namespace, u.GetNamespace()) {
		return foreignBeyond(u, claimant.UID)
	}
	switch {
	case ref != nil && ref.UID != claimant.UID:
		return fmt.Sprintf("%s %s", ref.Kind, ref.Name)
	case ref != nil && claimant.Mark != nil:
		return fmt.Sprintf("another controller of %s %s", ref.Kind, ref.Name)
	case ref != nil:
		return "" // the parent's own, released as it stopped matching: written as desired again
	}
	return "no controller: an object this parent did not adopt (its labels do not match the parent's selector)"
}

// writeName names a child write in the trace: what it did, or what it tried when it failed.
func writeName(action apply.Action, deleting bool, err error) string {
	switch {
	case err == nil:
		return string(action)
	case deleting:
		return "delete"
	}
	return "apply"
}

func (r *Runner) applyResource(rule int) apply.Resource {
	return apply.Resource{GVR: r.children[rule].GVR, Namespaced: r.children[rule].Namespaced}
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
