package composite

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/index"
	"metascript.dev/metascript/engine/order"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/revision"
)

// RolledOutCondition is the condition type a parent with rolling children carries in its
// status: True once every child is on the newest revision; False while rolling out (with
// progress) or paused (naming the child that holds the rollout and why).
const RolledOutCondition = "RolledOut"

// rolling is what a controller with rolling child rules needs.
type rolling struct {
	paths []string                                // revisionHistory.fieldPaths
	rules map[int][]v1alpha1.StatusConditionCheck // rolling rule index → its status checks
	store revision.Store
	// namespace holds the revisions of a cluster-scoped parent (Env.RevisionNamespace);
	// empty for a namespaced one, whose revisions live in its own namespace.
	namespace string
}

// askRolling is Ask for a parent with rolling children. The hook is called once for each
// live revision, with the parent as it was in that revision (its patch applied); each child
// of a rolling rule is driven by the revision it belongs to, creating and scaling by the
// newest. One child moves to the newest revision per reconcile, once every child already on
// it exists and passes its rule's status checks. The revisions are written (Prepare) before
// any child, so that a restart finds the rollout where it was.
func (k *kind) askRolling(d *reconcile.Gathered) (reconcile.Asked, error) {
	parent := d.Parent
	a := &rollingAsked{k: k, d: d, observed: map[revision.Child]*unstructured.Unstructured{}}
	a.patch = revision.Patch(parent, k.rolling.paths)
	a.latest = revision.Name(k.revisionBase(parent), revision.Hash(a.patch))
	revs, err := k.revisionsOf(parent, d.Inputs[0])
	if err != nil {
		return nil, err
	}
	a.revs = revs
	var existing []revision.Child
	for i := range k.rolling.rules {
		for _, o := range d.Observed[i] {
			c := k.child(i, o.GetName())
			a.observed[c] = o
			existing = append(existing, c)
		}
	}
	a.owner = revision.Assign(revs, a.latest, existing)
	a.asked = []string{a.latest}
	a.calls = []reconcile.Call{k.call(d, parent)}
	for _, r := range revs {
		if r.Name == a.latest || !slices.Contains(mapsValues(a.owner), r.Name) {
			continue
		}
		a.asked = append(a.asked, r.Name)
		a.calls = append(a.calls, k.call(d, revision.Apply(parent, r.Patch, k.rolling.paths)))
	}
	return a, nil
}

// rollingAsked is a rolling decision waiting for the answers of each live revision.
type rollingAsked struct {
	k        *kind
	d        *reconcile.Gathered
	patch    map[string]any
	latest   string
	revs     []revision.Revision
	observed map[revision.Child]*unstructured.Unstructured
	owner    map[revision.Child]string
	asked    []string // the revision of each call
	calls    []reconcile.Call
}

func (a *rollingAsked) Calls() []reconcile.Call { return a.calls }

func (a *rollingAsked) Decide(answers []reconcile.Answer) (*reconcile.Outcome, error) {
	k, parent, latest, owner, observed := a.k, a.d.Parent, a.latest, a.owner, a.observed
	parsed := map[string]*syncResponse{}
	for i, name := range a.asked {
		p, err := k.parse(a.d, answers[i].Response)
		if err != nil {
			return nil, err
		}
		parsed[name] = p
	}
	newest := parsed[latest]

	var desired []revision.Child
	for i := range k.rolling.rules {
		for _, o := range newest.children[i] {
			c := k.child(i, o.GetName())
			desired = append(desired, c)
			if _, ok := owner[c]; !ok {
				owner[c] = latest // a new child is created by the newest revision
			}
		}
	}
	exists := func(c revision.Child) bool { o := observed[c]; return o != nil && o.GetDeletionTimestamp() == nil }
	step := revision.Plan(latest, owner, desired, exists, func(c revision.Child) (bool, string) {
		return passes(observed[c], k.rolling.rules[k.ruleOf(c)])
	})
	writes := revision.Record(a.revs, latest, a.patch, owner, func(c revision.Child) bool { return observed[c] != nil })

	out := &reconcile.Outcome{Children: map[int][]*unstructured.Unstructured{}, Untouched: map[*unstructured.Unstructured]bool{},
		ResyncAfter: newest.ResyncAfter, Finalized: newest.Finalized, Events: newest.Events}
	for i, list := range newest.children {
		if _, isRolling := k.rolling.rules[i]; !isRolling {
			out.Children[i] = list
			continue
		}
		for _, o := range list {
			c := k.child(i, o.GetName())
			rev := owner[c]
			if rev == latest {
				out.Children[i] = append(out.Children[i], o)
				continue
			}
			if old := findChild(parsed[rev].children[i], o.GetName()); old != nil {
				out.Children[i] = append(out.Children[i], old)
			} else if obs := observed[c]; obs != nil {
				out.Untouched[obs] = true // its revision no longer asks for it: leave it be
			}
		}
	}
	held := k.holdRemovals(step, desired, observed, out)
	if len(writes.Create)+len(writes.Update)+len(writes.Delete) > 0 {
		out.Prepare = func(ctx context.Context) error { return k.rolling.store.Write(ctx, parent, writes) }
	}
	cond := rolloutCondition(latest, step)
	if held > 0 {
		cond["message"] = fmt.Sprintf("%s; %d child(ren) the hook no longer returns wait for removal, one at a time once every child is ready", cond["message"], held)
	}
	out.Status, out.Conditions = newest.Status, []map[string]any{cond}
	k.applyOrder(a.d, newest.order, out)
	return out, nil
}

// holdRemovals keeps rolling children the newest revision no longer asks for (a scale-down)
// until removing one cannot take a second child down. A leaving child that is down already
// (it fails its checks) goes at once: removing it takes nothing further down. A healthy one
// waits while any child is down: one holds the rollout or has just moved, one is being
// deleted, or one fails its checks; then the one with the highest name goes, and the rest
// wait for the next reconcile, which its deletion brings. It returns how many it kept.
func (k *kind) holdRemovals(step revision.Step, desired []revision.Child, observed map[revision.Child]*unstructured.Unstructured,
	out *reconcile.Outcome) int {
	var healthy []revision.Child
	down := step.Blocker != nil || step.Moved != nil
	for c, o := range observed {
		if o == nil {
			continue
		}
		if o.GetDeletionTimestamp() != nil {
			down = true // going already: one child down
			continue
		}
		ok, _ := passes(o, k.rolling.rules[k.ruleOf(c)])
		switch {
		case !ok:
			down = true // a leaving one among them goes now, as it is
		case !slices.Contains(desired, c):
			healthy = append(healthy, c)
		}
	}
	if len(healthy) == 0 {
		return 0
	}
	slices.SortFunc(healthy, func(a, b revision.Child) int { return compareNames(b.Name, a.Name) }) // highest first
	if !down {
		healthy = healthy[1:] // this one goes now
	}
	for _, c := range healthy {
		out.Untouched[observed[c]] = true
	}
	return len(healthy)
}

// compareNames orders names as their numbers read: "c-10" after "c-9".
func compareNames(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// rolloutCondition says where the rollout is.
func rolloutCondition(latest string, s revision.Step) map[string]any {
	cond := map[string]any{"type": RolledOutCondition, "status": string(metav1.ConditionTrue), "reason": "RolledOut",
		"message": fmt.Sprintf("every child is on revision %s", latest)}
	switch {
	case s.Blocker != nil && s.Pending == 0:
		// Every child is on the newest revision; one is not ready yet (creation, scale-up,
		// or the last one of a rollout).
		cond["status"], cond["reason"] = string(metav1.ConditionFalse), "Waiting"
		cond["message"] = fmt.Sprintf("revision %s: %d of %d children updated; %s is not ready: %s",
			latest, s.Updated, s.Total, s.Blocker, s.Why)
	case s.Blocker != nil:
		cond["status"], cond["reason"] = string(metav1.ConditionFalse), "Paused"
		cond["message"] = fmt.Sprintf("revision %s: %d of %d children updated; %s holds the rollout: %s",
			latest, s.Updated, s.Total, s.Blocker, s.Why)
	case s.Updated < s.Total:
		cond["status"], cond["reason"] = string(metav1.ConditionFalse), "RollingOut"
		cond["message"] = fmt.Sprintf("revision %s: %d of %d children updated", latest, s.Updated, s.Total)
	}
	return cond
}

// passes checks an existing child against its rule's status checks.
func passes(obj *unstructured.Unstructured, checks []v1alpha1.StatusConditionCheck) (bool, string) {
	return order.PassesChecks(obj, checks)
}

// revisionBase is what a parent's revision names start with: its name, and for a cluster-scoped
// parent, whose revisions share one namespace with other kinds' parents of that name, a
// piece of its UID.
func (k *kind) revisionBase(parent *unstructured.Unstructured) string {
	if k.rolling.namespace == "" {
		return parent.GetName()
	}
	uid := string(parent.GetUID())
	return parent.GetName() + "-" + uid[:min(8, len(uid))]
}

// revisionsOf reads the parent's revisions from the revisions' cache, by owner.
func (k *kind) revisionsOf(parent *unstructured.Unstructured, idx cache.Indexer) ([]revision.Revision, error) {
	objs, _ := idx.ByIndex(index.ControllerUID, string(parent.GetUID()))
	out := make([]revision.Revision, 0, len(objs))
	for _, o := range objs {
		r, err := revision.FromObject(o.(*unstructured.Unstructured))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (k *kind) child(rule int, name string) revision.Child {
	gvk := k.rules[rule].GVK
	return revision.Child{Group: gvk.Group, Kind: gvk.Kind, Name: name}
}

func (k *kind) ruleOf(c revision.Child) int {
	for i := range k.rolling.rules {
		if gvk := k.rules[i].GVK; gvk.Group == c.Group && gvk.Kind == c.Kind {
			return i
		}
	}
	return -1
}

func findChild(list []*unstructured.Unstructured, name string) *unstructured.Unstructured {
	for _, o := range list {
		if o.GetName() == name {
			return o
		}
	}
	return nil
}

func mapsValues(m map[revision.Child]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
