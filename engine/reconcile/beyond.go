package reconcile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/index"
	"metascript.dev/metascript/engine/resources"
)

// Children beyond a namespaced parent's namespace (a Namespace, a ClusterRole, a RoleBinding
// in another namespace) carry no owner reference to it: the parent claims them by label
// (engine/claim's label table, Parent.Beyond), finds them through the ParentUID index of
// each child informer, and hears of them through that label (labelledRequests, and the
// router's labelled route), never by listing. They are written without an owner reference
// (apply.NoOwner), so the garbage collector does not delete them with the parent: a Kind that
// is a Cleaner has the skeleton do it (cleanup below).

// Cleaner is implemented by a Kind some of whose children the garbage collector does not
// delete with their parent: the engine deletes them itself before the parent goes. The
// skeleton then holds the controller's finalizer on every parent that has, or is about to
// write, such a child, also without a finalize hook. While such a parent is being deleted:
//
//   - without a finalize hook, no hook is called, no cleaned child is desired (each is
//     deleted), every other child is left as it is for the garbage collector, and the
//     finalizer is removed once no claimed child that Cleans remains;
//   - with one, the hook's answers are written as always; once it answers finalized, the
//     cleaned children it still returns are deleted all the same, and the finalizer goes
//     only once none remains.
//
// A parent's cleaned children are gone when the cache holds none of them: a child whose
// deletion waits on its own finalizers (a Namespace emptying itself) holds the parent's
// finalizer until then, and its deletion event reconciles the parent again.
type Cleaner interface {
	// Cleans reports whether the engine must delete child, a desired or claimed child of
	// child rule rule, itself before parent goes. It is called for every child of every
	// parent the skeleton decides about and must be cheap.
	Cleans(parent *unstructured.Unstructured, rule int, child *unstructured.Unstructured) bool
	// Teardown adjusts out, the cleanup outcome of d.Parent (the cleaned children not
	// desired, the others untouched, Finalized), to the order in which its children must
	// go: a child it keeps for now is marked Untouched, and Finalized is cleared while any
	// is kept. It may add conditions (out.Status then holds the parent's status).
	Teardown(d *Gathered, out *Outcome)
}

// CheckChildScope refuses a cluster-scoped child resource (field) of a namespaced parent
// resource (parentField) for a controller confined to its namespace (kind names its kind,
// confined its namespace): such a child would be beyond the parent's namespace. For any
// other controller it is allowed: the child is claimed by label.
func CheckChildScope(field string, res resources.Resource, parentField string, parent resources.Resource, kind, confined string) error {
	if confined == "" || !parent.Namespaced || res.Namespaced {
		return nil
	}
	return fmt.Errorf("%s: %s is cluster-scoped and the parent resource %s (%s) is namespaced: a %s is confined to its namespace %q and writes no child beyond a parent's namespace (a cluster-scoped controller kind may)",
		field, res.GVR.GroupResource(), parent.GVR.Resource, parentField, kind, confined)
}

// cleaner is the kind as a Cleaner; nil when it is not one.
func (r *Runner) cleaner() Cleaner {
	c, _ := r.cfg.Kind.(Cleaner)
	return c
}

// ownerFor is the owner a child named namespace is written for: apply.NoOwner beyond a
// namespaced parent's namespace, owner otherwise.
func ownerFor(parent *unstructured.Unstructured, owner metav1.OwnerReference, namespace string) metav1.OwnerReference {
	if claim.Outside(parent.GetNamespace(), namespace) {
		return apply.NoOwner
	}
	return owner
}

// cleaned reports whether any of children, by rule, is one the engine must delete itself.
func (r *Runner) cleaned(parent *unstructured.Unstructured, children map[int][]*unstructured.Unstructured) bool {
	c := r.cleaner()
	if c == nil {
		return false
	}
	for rule, objs := range children {
		for _, o := range objs {
			if c.Cleans(parent, rule, o) {
				return true
			}
		}
	}
	return false
}

// holdsForCleanup reports whether a parent that is not being deleted needs the controller's
// finalizer for cleanup: it claims, or its outcome desires, a child the engine must delete
// itself. The finalizer is added before such a child is first written.
func (r *Runner) holdsForCleanup(parent *unstructured.Unstructured, observed map[int][]*unstructured.Unstructured, out *Outcome) bool {
	return r.cleaned(parent, observed) || r.cleaned(parent, out.Children)
}

// cleanupOutcome is the outcome of a parent being deleted without a finalize hook (d has
// no hook to call): no cleaned child desired, every other observed child untouched, in the
// order the kind's Teardown keeps; Finalized lets the finalizer go once no cleaned child
// remains.
func (r *Runner) cleanupOutcome(d *Gathered) *Outcome {
	out := &Outcome{Untouched: map[*unstructured.Unstructured]bool{}, Finalized: true}
	c := r.cleaner()
	for rule, objs := range d.Observed {
		for _, o := range objs {
			if c == nil || !c.Cleans(d.Parent, rule, o) {
				out.Untouched[o] = true
			}
		}
	}
	if c != nil {
		c.Teardown(d, out)
	}
	return out
}

// dropCleaned removes from a finalized outcome the children the engine must delete itself:
// the finalize hook is done, and what it still returns of them is deleted all the same.
func (r *Runner) dropCleaned(parent *unstructured.Unstructured, out *Outcome) {
	c := r.cleaner()
	if c == nil || !out.Finalized {
		return
	}
	for rule, objs := range out.Children {
		kept := objs[:0:0]
		for _, o := range objs {
			if !c.Cleans(parent, rule, o) {
				kept = append(kept, o)
			}
		}
		out.Children[rule] = kept
	}
}

// labelledRequests is the parent that claims u by label (index.LabelledParent), looked up by
// UID in the parents' caches; none when u is not labelled or its parent is not cached.
func (r *Runner) labelledRequests(u *unstructured.Unstructured) []Request {
	uid, ok := index.LabelledParent(u)
	if !ok {
		return nil
	}
	var out []Request
	for i, p := range r.parents {
		for _, key := range parentKeysByUID(p.indexer, uid) {
			out = append(out, Request{Resource: i, Key: key})
		}
	}
	return out
}

// parentKeysByUID are the cache keys of the objects of idx whose UID is uid, through the UID
// index; none when idx has no such index.
func parentKeysByUID(idx interface {
	IndexKeys(name, value string) ([]string, error)
}, uid types.UID) []string {
	if idx == nil {
		return nil
	}
	keys, err := idx.IndexKeys(index.UID, string(uid))
	if err != nil {
		return nil
	}
	return keys
}

// foreignBeyond says who holds an object without a ControllerRef under the name of a desired
// child beyond the parent's namespace that the parent does not claim: it is never adopted,
// updated or deleted.
func foreignBeyond(u *unstructured.Unstructured, parentUID types.UID) string {
	if uid, ok := index.LabelledParent(u); ok && uid != parentUID {
		return "another parent (" + claim.ParentUIDLabel + "=" + string(uid) + ")"
	}
	return "no controller: an object the engine did not create for this parent (it lacks the label " +
		claim.ParentUIDLabel + "=" + string(parentUID) + " and the controller's mark); the engine never takes it over"
}

// labelledSubs adds to out the child subscribers of the runners that reach, as a parent, the
// object whose UID is uid: the parent that claims a child by label. Every parent router of
// the children's owners is asked through its UID index (index.RegisterParentIndexes); a
// router without that index has no parent that claims by label. The parent routers are
// asked with rt.mu released.
func (rt *router) labelledSubs(out map[*childSub]bool, uid types.UID) {
	var routers []*router
	rt.mu.RLock()
	for _, byParent := range rt.owners {
		for parents := range byParent {
			routers = append(routers, parents)
		}
	}
	rt.mu.RUnlock()
	runners := map[*Runner]bool{}
	for _, parents := range routers {
		if !parents.inf.HasIndex(index.UID) {
			continue
		}
		found, _ := parents.inf.Indexer().ByIndex(index.UID, string(uid))
		for _, p := range found {
			maps.Copy(runners, parents.runnersOf(p.(*unstructured.Unstructured)))
		}
	}
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	for r := range runners {
		for _, s := range rt.children[r] {
			out[s] = true
		}
	}
}

// LabelValue is name as the value of a label marking a controller's objects: name itself, or
// when longer than a label value may be (63 characters) a prefix of it and a hash, so that
// distinct names stay distinct.
func LabelValue(name string) string {
	const limit = 63
	if len(name) <= limit {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "-" + hex.EncodeToString(sum[:])[:16]
	return name[:limit-len(suffix)] + suffix
}
