package informers

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/resources"
)

// The informer of a resource in one namespace lists and watches that namespace alone, is
// shared by every holder of that scope, is distinct from the resource's informer of every
// namespace (whose needs it never widens), and stops with its last holder.
func TestNamespaceScopeCachesItsNamespaceOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	teamA, teamB := "scope-a", "scope-b"
	for _, ns := range []string{teamA, teamB} {
		createNamespace(t, dyn, ns)
		for _, name := range []string{"s1", "s2"} {
			if _, err := dyn.Resource(secrets).Namespace(ns).Create(ctx, object(secrets, ns, name, "", ""), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	f := NewFactory(dyn)
	defer f.Shutdown()
	inA := Scope{GVR: secrets, Namespace: teamA}
	parents := Need{Parents: cmKind}
	first := f.AcquireFor(inA, parents)
	second := f.AcquireFor(inA, Need{})
	if first != second {
		t.Fatal("two holders of one namespace's secrets got two informers")
	}
	if !cache.WaitForCacheSync(ctx.Done(), first.HasSynced) {
		t.Fatal("cache did not sync")
	}
	if got, want := first.Indexer().ListKeys(), []string{teamA + "/s1", teamA + "/s2"}; !slices.Equal(sorted(got), want) {
		t.Fatalf("the informer of %s caches %v, want %v", teamA, got, want)
	}
	// An object created later in another namespace never reaches it.
	if _, err := dyn.Resource(secrets).Namespace(teamB).Create(ctx, object(secrets, teamB, "s3", "", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(secrets).Namespace(teamA).Create(ctx, object(secrets, teamA, "s3", "", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitKeys(t, first, teamA, "s1", "s2", "s3")
	if got := keys(first, teamB); len(got) != 0 {
		t.Fatalf("the informer of %s caches %v of %s", teamA, got, teamB)
	}

	// The cluster-wide informer is another one, narrowed by its own holders' needs only.
	children := Need{Owners: []resources.Resource{cmResource}, Orphans: Orphans{Keys: []string{"app"}}}
	everywhere := f.AcquireFor(Scope{GVR: secrets}, children)
	if everywhere == first {
		t.Fatal("the informer of every namespace is the informer of one")
	}
	if !cache.WaitForCacheSync(ctx.Done(), everywhere.HasSynced) {
		t.Fatal("cache did not sync")
	}
	if got := keys(everywhere, teamA); len(got) != 0 {
		t.Fatalf("a namespace's holder widened the cluster-wide informer: it caches %v", got)
	}
	waitTrue(t, "Sizes by scope", func() bool {
		sizes := f.Sizes()
		return sizes[inA] == 3 && sizes[Scope{GVR: secrets}] == 0 && len(sizes) == 2
	})
	if got := f.Keys(secrets); len(got) != 2 || len(got[inA]) != 3 {
		t.Fatalf("Keys(secrets) = %v, want 3 keys of %s and none of every namespace", got, teamA)
	}

	// The last holder of the namespace's informer stops it.
	f.ReleaseFor(first, parents)
	if _, ok := f.Sizes()[inA]; !ok {
		t.Fatal("the informer stopped while a holder remained")
	}
	f.Release(second)
	if _, ok := f.Sizes()[inA]; ok {
		t.Fatal("the informer of a namespace runs after its last holder released it")
	}
	f.ReleaseFor(everywhere, children)
	if n := f.Active(); n != 0 {
		t.Fatalf("%d informers run after every holder released", n)
	}
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
