package informers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/engine/shard"
	"metascript.dev/metascript/test/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { controlplane.RunTests(m, &cp) }

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	cmKind     = schema.GroupKind{Kind: "ConfigMap"}
	cmResource = resources.Resource{GVR: configMaps, GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespaced: true}
)

// owned is a replica's share as a set of parent names, swapped whole.
type owned struct {
	mu    sync.Mutex
	names map[string]bool
	ns    string
}

func (o *owned) set(names ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.names = map[string]bool{}
	for _, n := range names {
		o.names[shard.Key(cmKind, o.ns+"/"+n)] = true
	}
}

func (o *owned) owns(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.names[key]
}

func object(gvr schema.GroupVersionResource, ns, name, owner, ownerKind string) *unstructured.Unstructured {
	kind := map[string]string{"configmaps": "ConfigMap", "secrets": "Secret"}[gvr.Resource]
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns}}}
	if owner != "" {
		api, controller := "v1", true
		if ownerKind == "Deployment" {
			api = "apps/v1"
		}
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: api, Kind: ownerKind, Name: owner,
			UID: "00000000-0000-0000-0000-000000000001", Controller: &controller}})
	}
	return u
}

// keys returns the names an informer caches in ns, sorted.
func keys(inf *Informer, ns string) []string {
	var out []string
	for _, k := range inf.Indexer().ListKeys() {
		if name, ok := strings.CutPrefix(k, ns+"/"); ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func createNamespace(t *testing.T, dyn dynamic.Interface, ns string) {
	t.Helper()
	if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(context.Background(),
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitKeys(t *testing.T, inf *Informer, ns string, want ...string) {
	t.Helper()
	slices.Sort(want)
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := keys(inf, ns)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s caches %v, want %v", inf.GVR.Resource, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitTrue(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: timed out", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A sharing factory caches the parents its replica owns, their children and orphans; after a
// change of ownership, Reshard brings the caches to the new share, and settled says when.
func TestShareCachesOwnedParentsAndTheirChildren(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	ns := "share"
	createNamespace(t, dyn, ns)
	create := func(gvr schema.GroupVersionResource, name, owner, ownerKind string) {
		t.Helper()
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, object(gvr, ns, name, owner, ownerKind), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		p := fmt.Sprintf("p%d", i)
		create(configMaps, p, "", "")
		create(secrets, "c-"+p, p, "ConfigMap")
	}
	create(secrets, "orphan", "", "")
	create(secrets, "foreign", "web", "Deployment")

	share := &owned{ns: ns}
	share.set("p0", "p1", "p2")
	f := NewFactory(dyn)
	f.ShareBy(share.owns)
	defer f.Shutdown()
	parents := f.AcquireFor(Scope{GVR: configMaps}, Need{Parents: cmKind})
	children := f.AcquireFor(Scope{GVR: secrets}, Need{Owners: []resources.Resource{cmResource}, Orphans: Orphans{Every: true}})
	if !cache.WaitForCacheSync(ctx.Done(), parents.HasSynced, children.HasSynced) {
		t.Fatal("caches did not sync")
	}
	waitKeys(t, parents, ns, "p0", "p1", "p2")
	waitKeys(t, children, ns, "c-p0", "c-p1", "c-p2", "orphan")

	// The ring changes: p0 goes, p3 and p4 come.
	share.set("p1", "p2", "p3", "p4")
	settled := f.Reshard()
	waitTrue(t, "reshard settled", settled)
	// Settled means the store holds the new share already, not eventually.
	if got, want := keys(children, ns), []string{"c-p1", "c-p2", "c-p3", "c-p4", "orphan"}; !slices.Equal(got, want) {
		t.Fatalf("settled with children %v, want %v", got, want)
	}
	waitKeys(t, parents, ns, "p1", "p2", "p3", "p4")

	// A child whose controller becomes a parent owned elsewhere leaves the cache; a new
	// child of an owned parent enters it; an orphan adopted by an owned parent stays.
	c, err := dyn.Resource(secrets).Namespace(ns).Get(ctx, "c-p1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refs := c.GetOwnerReferences()
	refs[0].Name = "p5"
	c.SetOwnerReferences(refs)
	if _, err := dyn.Resource(secrets).Namespace(ns).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	create(secrets, "c2-p3", "p3", "ConfigMap")
	create(secrets, "c2-p5", "p5", "ConfigMap")
	waitKeys(t, children, ns, "c-p2", "c-p3", "c-p4", "c2-p3", "orphan")

	// A holder that needs everything widens the cache; HasSynced waits for it.
	whole := f.Acquire(secrets)
	if !cache.WaitForCacheSync(ctx.Done(), whole.HasSynced) {
		t.Fatal("widened cache did not sync")
	}
	if got, want := keys(whole, ns), []string{"c-p0", "c-p1", "c-p2", "c-p3", "c-p4", "c-p5", "c2-p3", "c2-p5", "foreign", "orphan"}; !slices.Equal(got, want) {
		t.Fatalf("widened and synced with %v, want %v", got, want)
	}
	// Once it lets go, the cache narrows again.
	f.Release(whole)
	waitKeys(t, children, ns, "c-p2", "c-p3", "c-p4", "c2-p3", "orphan")
	// Deleting an object outside the share changes nothing; one inside leaves.
	for _, name := range []string{"c2-p5", "c-p4"} {
		if err := dyn.Resource(secrets).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitKeys(t, children, ns, "c-p2", "c-p3", "c2-p3", "orphan")
}

// An informer caches only the orphans carrying a label key some holder reads (and those
// labelled with a parent's UID); widening the keys brings the others in before HasSynced.
// Without sharing, every object with a controller is cached. The list is read in pages.
func TestOrphansByLabelKey(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	defer func(n int64) { listPage = n }(listPage)
	listPage = 2
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	ns := "orphans"
	createNamespace(t, dyn, ns)
	create := func(name, owner, ownerKind string, labels map[string]string) {
		t.Helper()
		u := object(secrets, ns, name, owner, ownerKind)
		u.SetLabels(labels)
		if _, err := dyn.Resource(secrets).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("keyed", "", "", map[string]string{"app": "x"})
	create("other-key", "", "", map[string]string{"tier": "y"})
	create("plain", "", "", nil)
	create("by-uid", "", "", map[string]string{claim.ParentUIDLabel: "00000000-0000-0000-0000-000000000009"})
	create("owned", "p", "ConfigMap", nil)
	create("foreign", "web", "Deployment", nil)

	f := NewFactory(dyn)
	defer f.Shutdown()
	app := Need{Owners: []resources.Resource{cmResource}, Orphans: Orphans{Keys: []string{"app"}}}
	children := f.AcquireFor(Scope{GVR: secrets}, app)
	if !cache.WaitForCacheSync(ctx.Done(), children.HasSynced) {
		t.Fatal("cache did not sync")
	}
	if got, want := keys(children, ns), []string{"by-uid", "foreign", "keyed", "owned"}; !slices.Equal(got, want) {
		t.Fatalf("synced with %v, want %v", got, want)
	}
	both := Need{Owners: app.Owners, Orphans: Orphans{Keys: []string{"app", "tier"}}}
	f.Widen(children, app, both)
	waitTrue(t, "widened cache synced", children.HasSynced)
	if got, want := keys(children, ns), []string{"by-uid", "foreign", "keyed", "other-key", "owned"}; !slices.Equal(got, want) {
		t.Fatalf("widened and synced with %v, want %v", got, want)
	}
	// An orphan that gains a key read enters; one that loses it leaves.
	u, err := dyn.Resource(secrets).Namespace(ns).Get(ctx, "plain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.SetLabels(map[string]string{"tier": "z"})
	if _, err := dyn.Resource(secrets).Namespace(ns).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if u, err = dyn.Resource(secrets).Namespace(ns).Get(ctx, "keyed", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	u.SetLabels(nil)
	if _, err := dyn.Resource(secrets).Namespace(ns).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitKeys(t, children, ns, "by-uid", "foreign", "other-key", "owned", "plain")
	// Sizes counts what the store holds, including what left it.
	waitTrue(t, "Sizes counts the store", func() bool {
		return f.Sizes()[Scope{GVR: secrets}] == len(children.Indexer().ListKeys())
	})
	f.ReleaseFor(children, both)
}

// A held informer does not start before a holder needs something of it, and keeps what a
// released holder needed until it is unheld: replacing a holder by one needing the same
// makes no resync pass. Without a hold, the release narrows the cache (a pass).
func TestHoldKeepsReleasedNeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	ctx := context.Background()
	f := NewFactory(dynamic.NewForConfigOrDie(cp.Config))
	defer f.Shutdown()
	epoch := func(inf *Informer) uint64 {
		inf.share.mu.Lock()
		defer inf.share.mu.Unlock()
		return inf.share.epoch
	}
	need := Need{Owners: []resources.Resource{cmResource}, Orphans: Orphans{Keys: []string{"app"}}}
	inf := f.Hold(Scope{GVR: secrets})
	if inf.started {
		t.Fatal("a held informer started before any holder needed something of it")
	}
	f.AcquireFor(Scope{GVR: secrets}, need)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("cache did not sync")
	}
	before := epoch(inf)
	f.ReleaseFor(inf, need)
	f.AcquireFor(Scope{GVR: secrets}, need)
	f.Unhold(inf)
	if got := epoch(inf); got != before {
		t.Fatalf("replacing a holder while held made %d resync passes, want none", got-before)
	}
	other := f.AcquireFor(Scope{GVR: secrets}, Need{Parents: cmKind})
	before = epoch(inf)
	f.ReleaseFor(inf, need)
	if got := epoch(inf); got != before+1 {
		t.Fatalf("a release without a hold made %d resync passes, want 1", got-before)
	}
	f.ReleaseFor(other, Need{Parents: cmKind})
}
