package mapping

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/index"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/selector"
)

// input is one object a parent maps.
type input struct {
	res             int // index of kind.inputs
	obj             *unstructured.Unstructured
	key             string // its map key: its UID
	namespace, name string // obj's, read once for sorting
}

// group is the observed outputs of one map key.
type group struct {
	byRule map[int][]*unstructured.Unstructured
	all    []*unstructured.Unstructured
}

// job is one hook call of a reconcile and what came of it.
type job struct {
	key       string
	input     *input // nil for a tombstone call
	group     *group
	about     string
	outputs   map[int][]*unstructured.Unstructured // map: the valid answer
	keep      []*unstructured.Unstructured         // tombstone: the outputs to keep
	resync    time.Duration
	events    []protocol.Event
	err       error
	versionIn string
}

// Ask implements reconcile.Kind: it asks for the map hook of every input whose memo no
// longer stands and the tombstone hook of every detached key, each call standing alone; the
// outputs of keys that need no call are left untouched.
func (k *kind) Ask(d *reconcile.Gathered) (reconcile.Asked, error) {
	parent := d.Parent
	sel, err := k.selectors.Get(parent)
	if err != nil {
		return nil, err
	}
	a := &asked{k: k, d: d, uid: parent.GetUID(), pfp: protocol.ParentFingerprint(parent), now: time.Now(),
		out: &reconcile.Outcome{Children: map[int][]*unstructured.Unstructured{}, Untouched: map[*unstructured.Unstructured]bool{}}}
	a.inputs = k.inputsOf(parent, sel, d.Inputs)
	groups := k.groupOutputs(d.Observed)
	live := map[string]bool{}
	for i := range a.inputs {
		in := &a.inputs[i]
		live[in.key] = true
		g := groups[in.key]
		if g == nil {
			g = &group{}
		}
		if m := k.memos.get(a.uid, in.key); m.valid(in.obj.GetResourceVersion(), a.pfp, g.all, a.now) {
			leave(a.out, g)
			a.due(m)
			continue
		}
		a.jobs = append(a.jobs, &job{key: in.key, input: in, group: g, about: k.inputs[in.res].Describe(in.obj),
			versionIn: in.obj.GetResourceVersion()})
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		if live[key] || !k.tombstone {
			continue // a live key's outputs, or detached outputs to delete
		}
		live[key] = true
		g := groups[key]
		if m := k.memos.get(a.uid, key); m.valid("", a.pfp, g.all, a.now) {
			leave(a.out, g)
			a.due(m)
			continue
		}
		a.jobs = append(a.jobs, &job{key: key, group: g, about: "detached map key " + key})
	}
	k.memos.keep(a.uid, live)
	return a, nil
}

// asked is a map decision waiting for the answers of its jobs.
type asked struct {
	k      *kind
	d      *reconcile.Gathered
	uid    types.UID
	pfp    string
	now    time.Time
	inputs []input
	jobs   []*job
	out    *reconcile.Outcome
	next   time.Time // the earliest resyncAfterSeconds due
}

// due notes when a standing memo asks for a resync.
func (a *asked) due(m *memo) {
	if m != nil && m.due && (a.next.IsZero() || m.expires.Before(a.next)) {
		a.next = m.expires
	}
}

func (a *asked) Calls() []reconcile.Call {
	calls := make([]reconcile.Call, len(a.jobs))
	for i, j := range a.jobs {
		calls[i] = a.k.call(a.d, j)
	}
	return calls
}

// Decide reads each job's answer, then assembles one outcome in which the outputs of keys
// whose call failed are left untouched.
func (a *asked) Decide(answers []reconcile.Answer) (*reconcile.Outcome, error) {
	k, d, out, jobs, uid, pfp, now := a.k, a.d, a.out, a.jobs, a.uid, a.pfp, a.now
	for i, j := range jobs {
		if j.err = answers[i].Err; j.err == nil {
			k.parse(d, j, answers[i].Response)
		}
		if j.err != nil && answers[i].Err == nil {
			out.Rejected = append(out.Rejected, reconcile.Rejection{Hook: callHook(j), About: j.about, Err: j.err})
		}
	}
	due := a.due

	// Assemble in a fixed order, so that of two inputs asking for one output the same one wins.
	owner := map[string]string{} // output id → map key
	for o := range out.Untouched {
		owner[outputID(o)] = o.GetLabels()[MapKeyLabel]
	}
	var failed, deferred []string
	var written []*job
	for _, j := range jobs {
		if j.err == nil && j.input != nil {
			j.err = claimOutputs(j, owner)
			if j.err != nil {
				out.Rejected = append(out.Rejected, reconcile.Rejection{Hook: "map", About: j.about, Err: j.err})
			}
		}
		var later *hooks.RetryAfterError
		if errors.As(j.err, &later) {
			// The webhook said when to call again for this input: only its key waits, and the
			// parent comes back then, not with backoff.
			leave(out, j.group)
			m := &memo{deferred: true, due: true, expires: now.Add(later.After)}
			k.memos.set(uid, j.key, m)
			due(m)
			deferred = append(deferred, fmt.Sprintf("%s (%s): called again in %s", j.key, j.about, later.After))
			continue
		}
		if j.err != nil {
			leave(out, j.group)
			failed = append(failed, fmt.Sprintf("%s (%s): %v", j.key, j.about, j.err))
			continue
		}
		out.Events = append(out.Events, j.events...)
		if j.input == nil {
			for _, o := range j.keep {
				out.Untouched[o] = true
			}
			m := &memo{parent: pfp, outputs: versions(j.keep)}
			k.expire(m, j.resync, now)
			k.memos.set(uid, j.key, m)
			due(m)
			continue
		}
		for rule, objs := range j.outputs {
			out.Children[rule] = append(out.Children[rule], objs...)
		}
		written = append(written, j)
	}
	next := a.next
	for _, j := range written {
		if j.resync > 0 {
			if t := now.Add(j.resync); next.IsZero() || t.Before(next) {
				next = t
			}
		}
	}
	out.Written = func(stored map[*unstructured.Unstructured]*unstructured.Unstructured) {
		k.remember(uid, pfp, now, written, stored)
	}
	out.Status, out.Conditions = k.status(a.inputs, d.Observed, out), []map[string]any{mappedCondition(failed, deferred)}
	if !next.IsZero() {
		out.ResyncAfter = max(next.Sub(now), time.Millisecond)
	}
	if len(failed) > 0 {
		out.Retry = fmt.Errorf("%d map call(s) failed: %s", len(failed), strings.Join(failed, "; "))
	}
	return out, nil
}

// remember records, after the writes, a memo for each key whose outputs were all written:
// their versions as stored, so that the events of these writes find the memo standing. A
// key with a failed write keeps no memo and is called again.
func (k *kind) remember(uid types.UID, pfp string, now time.Time, written []*job,
	stored map[*unstructured.Unstructured]*unstructured.Unstructured) {
	for _, j := range written {
		var objs []*unstructured.Unstructured
		ok := true
		for _, list := range j.outputs {
			for _, o := range list {
				s := stored[o]
				if s == nil {
					ok = false
					break
				}
				objs = append(objs, s)
			}
		}
		if !ok {
			k.memos.set(uid, j.key, nil)
			continue
		}
		m := &memo{inputVersion: j.versionIn, parent: pfp, outputs: versions(objs)}
		k.expire(m, j.resync, now)
		k.memos.set(uid, j.key, m)
	}
}

// expire sets when m stops standing: after the hook's resyncAfterSeconds, or shortly before
// the next periodic resync, so that the resync finds it expired.
func (k *kind) expire(m *memo, resyncAfter time.Duration, now time.Time) {
	switch {
	case resyncAfter > 0:
		m.expires, m.due = now.Add(resyncAfter), true
	case k.resync > 0:
		m.expires = now.Add(k.resync * 9 / 10)
	}
}

// inputsOf lists the parent's inputs: objects of the input resources in its namespace (every
// namespace for a cluster-scoped parent) that its selector matches and it does not control,
// in a fixed order.
func (k *kind) inputsOf(parent *unstructured.Unstructured, sel labels.Selector, caches []cache.Indexer) []input {
	var out []input
	for i, c := range caches {
		var objs []any
		if k.parent.Namespaced {
			objs, _ = c.ByIndex(cache.NamespaceIndex, parent.GetNamespace())
		} else {
			objs = c.List()
		}
		for _, o := range objs {
			u, ok := o.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			if ref := index.ControllerRef(u); ref != nil && ref.UID == parent.GetUID() {
				continue // the parent's own output: never its input
			}
			if !sel.Matches(selector.Labels(u)) {
				continue
			}
			out = append(out, input{res: i, obj: u, key: string(u.GetUID()), namespace: u.GetNamespace(), name: u.GetName()})
		}
	}
	slices.SortFunc(out, func(a, b input) int {
		return cmp.Or(cmp.Compare(a.res, b.res), cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
	})
	return out
}

// groupOutputs groups the parent's outputs by map key.
func (k *kind) groupOutputs(observed map[int][]*unstructured.Unstructured) map[string]*group {
	out := map[string]*group{}
	for rule, objs := range observed {
		for _, o := range objs {
			key := o.GetLabels()[MapKeyLabel]
			g := out[key]
			if g == nil {
				g = &group{byRule: map[int][]*unstructured.Unstructured{}}
				out[key] = g
			}
			g.byRule[rule] = append(g.byRule[rule], o)
			g.all = append(g.all, o)
		}
	}
	return out
}

// leave marks a group's outputs untouched.
func leave(out *reconcile.Outcome, g *group) {
	if g == nil {
		return
	}
	for _, o := range g.all {
		out.Untouched[o] = true
	}
}

// claimOutputs records j's outputs in owner, refusing one that another key already holds.
func claimOutputs(j *job, owner map[string]string) error {
	for _, list := range j.outputs {
		for _, o := range list {
			if other, ok := owner[outputID(o)]; ok && other != j.key {
				return protocol.Invalid("outputs", "%s %s is already an output of another input (map key %s)",
					o.GetKind(), o.GetNamespace()+"/"+o.GetName(), other)
			}
		}
	}
	for _, list := range j.outputs {
		for _, o := range list {
			owner[outputID(o)] = j.key
		}
	}
	return nil
}

func outputID(o *unstructured.Unstructured) string {
	return o.GetAPIVersion() + "/" + o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}
