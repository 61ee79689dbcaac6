package reconcile

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/index"
	"metascript.dev/metascript/engine/resources"
)

// beyondKind is a Kind whose parents claim beyond their namespace with mark, and clean up
// what is outside.
type beyondKind struct{ mark *claim.Mark }

func (beyondKind) Selects(int, *unstructured.Unstructured) bool { return true }
func (k beyondKind) Claimant(p *unstructured.Unstructured) (claim.Parent, error) {
	c := claim.ParentOf(p, labels.Everything())
	c.Beyond = k.mark
	return c, nil
}
func (beyondKind) Ask(*Gathered) (Asked, error) { return nil, nil }
func (beyondKind) Cleans(parent *unstructured.Unstructured, _ int, child *unstructured.Unstructured) bool {
	return claim.Outside(parent.GetNamespace(), child.GetNamespace())
}
func (beyondKind) Teardown(*Gathered, *Outcome) {}

func labelledChild(ns, name string, lbls map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + ns + "-" + name))
	u.SetResourceVersion("1")
	u.SetLabels(lbls)
	return u
}

// TestGatherBeyond: a namespaced parent finds its labelled children in other namespaces and
// cluster-scoped through the ParentUID index, and nothing else outside its namespace.
func TestGatherBeyond(t *testing.T) {
	mark := &claim.Mark{Key: "m", Value: "ctl", Label: true}
	parent := &unstructured.Unstructured{Object: map[string]any{}}
	parent.SetNamespace("home")
	parent.SetUID("p")
	ours := map[string]string{claim.ParentUIDLabel: "p", "m": "ctl"}
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := index.RegisterChildIndexes(indexes{store}); err != nil {
		t.Fatal(err)
	}
	for _, o := range []*unstructured.Unstructured{
		labelledChild("b", "ours-b", ours),
		labelledChild("", "ours-cluster", ours),
		labelledChild("c", "other-controller", map[string]string{claim.ParentUIDLabel: "p", "m": "other"}),
		labelledChild("c", "other-parent", map[string]string{claim.ParentUIDLabel: "q", "m": "ctl"}),
		labelledChild("c", "unlabelled", nil),
	} {
		if err := store.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	k := beyondKind{mark: mark}
	p, _ := k.Claimant(parent)
	r := &Runner{overlay: newWrittenOverlay(), cfg: Config{Kind: k}}
	plan := claimPlan{observed: map[int][]*unstructured.Unstructured{}}
	r.gatherRule(&plan, 0, true, store, parent, p)
	var got []string
	for _, o := range plan.observed[0] {
		got = append(got, o.GetName())
	}
	if strings.Join(got, ",") != "ours-b,ours-cluster" && strings.Join(got, ",") != "ours-cluster,ours-b" {
		t.Errorf("observed %v, want ours-b and ours-cluster", got)
	}
	if len(plan.adopt)+len(plan.release) != 0 {
		t.Errorf("claims planned: adopt %v, release %v", plan.adopt, plan.release)
	}

	// Cleanup: those two are the engine's to delete, so the parent holds the finalizer;
	// without a finalize hook nothing is desired of them.
	if !r.holdsForCleanup(parent, plan.observed, &Outcome{}) {
		t.Error("holdsForCleanup = false with children beyond the namespace")
	}
	home := labelledChild("home", "home", nil)
	if r.holdsForCleanup(parent, map[int][]*unstructured.Unstructured{0: {home}}, &Outcome{}) {
		t.Error("holdsForCleanup = true with a child in the parent's namespace only")
	}
	if !r.holdsForCleanup(parent, nil, &Outcome{Children: map[int][]*unstructured.Unstructured{0: {labelledChild("x", "new", nil)}}}) {
		t.Error("holdsForCleanup = false before the first child beyond the namespace is written")
	}
	observed := map[int][]*unstructured.Unstructured{0: append(plan.observed[0], home)}
	out := r.cleanupOutcome(&Gathered{Parent: parent, Observed: observed})
	if !out.Finalized || len(out.Children) != 0 || len(out.Untouched) != 1 || !out.Untouched[home] {
		t.Errorf("cleanupOutcome = %+v, want finalized, no child desired, the home child untouched", out)
	}
	finalized := &Outcome{Finalized: true, Children: map[int][]*unstructured.Unstructured{0: {home, plan.observed[0][0]}}}
	r.dropCleaned(parent, finalized)
	if len(finalized.Children[0]) != 1 || finalized.Children[0][0] != home {
		t.Errorf("dropCleaned kept %v, want the home child only", finalized.Children[0])
	}
}

// TestStageCleanup: a Cleaner's parent being deleted without a finalize hook is cleaned up
// while it holds the finalizer; any other kind's just lets the finalizer go.
func TestStageCleanup(t *testing.T) {
	parent := &unstructured.Unstructured{Object: map[string]any{}}
	parent.SetNamespace("home")
	now := metav1.Now()
	parent.SetDeletionTimestamp(&now)
	parent.SetFinalizers([]string{"f"})
	prog := &Program{Hooks: map[string]hooks.Invoker{}}
	for _, tc := range []struct {
		name               string
		kind               Kind
		act, cleanup, drop bool
		hook               string
	}{
		{"cleaner", beyondKind{}, true, true, false, ""},
		{"not a cleaner", plainKind{}, false, false, true, "finalize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Runner{cfg: Config{Kind: tc.kind}, finalizer: "f", built: &Built{Descriptor: &Descriptor{}}, primary: "sync"}
			st := r.stageOf(0, parent, prog)
			if st.act != tc.act || st.cleanup != tc.cleanup || st.dropFinalizer != tc.drop || st.hook != tc.hook {
				t.Errorf("stage = %+v, want act %v cleanup %v drop %v hook %q", st, tc.act, tc.cleanup, tc.drop, tc.hook)
			}
		})
	}
}

type plainKind struct{}

func (plainKind) Selects(int, *unstructured.Unstructured) bool { return true }
func (plainKind) Claimant(*unstructured.Unstructured) (claim.Parent, error) {
	return claim.Parent{}, nil
}
func (plainKind) Ask(*Gathered) (Asked, error) { return nil, nil }

func TestCheckChildScope(t *testing.T) {
	res := func(resource string, namespaced bool) resources.Resource {
		return resources.Resource{GVR: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: resource}, Namespaced: namespaced}
	}
	ns, cluster := res("tenants", true), res("clusterroles", false)
	for _, tc := range []struct {
		name           string
		child, parent  resources.Resource
		confined, want string
	}{
		{"cluster-scoped child of a namespaced parent, cluster-scoped kind", cluster, ns, "", ""},
		{"cluster-scoped child of a namespaced parent, confined kind", cluster, ns, "team-a",
			`spec.childResources[1]: clusterroles.rbac.authorization.k8s.io is cluster-scoped and the parent resource tenants (spec.parentResource) is namespaced: a NamespacedCompositeController is confined to its namespace "team-a"`},
		{"namespaced child, confined kind", ns, ns, "team-a", ""},
		{"cluster-scoped child of a cluster-scoped parent", cluster, cluster, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckChildScope("spec.childResources[1]", tc.child, "spec.parentResource", tc.parent, "NamespacedCompositeController", tc.confined)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("err = %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestOwnerFor: a child beyond a namespaced parent's namespace is written without an owner.
func TestOwnerFor(t *testing.T) {
	parent := &unstructured.Unstructured{Object: map[string]any{}}
	parent.SetNamespace("home")
	owner := metav1.OwnerReference{UID: "p", Name: "p", Kind: "P", APIVersion: "v1"}
	if got := ownerFor(parent, owner, "home"); got != owner {
		t.Errorf("in the parent's namespace: %+v", got)
	}
	for _, ns := range []string{"b", ""} {
		if got := ownerFor(parent, owner, ns); got != apply.NoOwner {
			t.Errorf("namespace %q: owner %+v, want NoOwner", ns, got)
		}
	}
	parent.SetNamespace("")
	if got := ownerFor(parent, owner, "b"); got != owner {
		t.Errorf("cluster-scoped parent: %+v", got)
	}
}
