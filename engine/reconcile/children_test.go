package reconcile

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/index"
)

// indexes adapts a bare Indexer to index.Informer.
type indexes struct{ cache.Indexer }

func (i indexes) EnsureIndex(name string, fn cache.IndexFunc) error {
	return i.AddIndexers(cache.Indexers{name: fn})
}

// staleIndex answers index queries as of before its objects were added, as an index read
// just before an informer stores a new object does; lookups by key see the objects.
type staleIndex struct{ cache.Indexer }

func (staleIndex) ByIndex(string, string) ([]any, error) { return nil, nil }

// behindIndex answers index queries with an older version of the objects it holds, as an
// index read just before an informer stores a newer version does.
type behindIndex struct {
	cache.Indexer
	old *unstructured.Unstructured
}

func (b behindIndex) ByIndex(name, value string) ([]any, error) {
	if name == index.ControllerUID {
		return []any{b.old}, nil
	}
	return b.Indexer.ByIndex(name, value)
}

func childObject(name, rv string, owner types.UID) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name + "-" + string(owner)))
	u.SetResourceVersion(rv)
	u.SetLabels(map[string]string{"app": "web"})
	yes := true
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Parent", Name: string(owner), UID: owner, Controller: &yes}})
	return u
}

// TestGatherSeesWrittenChildren checks that a child the engine wrote is seen exactly once
// however far the cache has got, and never when its name is another parent's.
func TestGatherSeesWrittenChildren(t *testing.T) {
	const mine, theirs = types.UID("mine"), types.UID("theirs")
	parent := &unstructured.Unstructured{Object: map[string]any{}}
	parent.SetNamespace("ns")
	parent.SetUID(mine)
	p := claim.ParentOf(parent, labels.SelectorFromSet(labels.Set{"app": "web"}))
	tests := []struct {
		name    string
		written *unstructured.Unstructured // recorded as the parent's write
		cached  *unstructured.Unstructured // in the cache
		stale   bool                       // the index read misses cached
		behind  *unstructured.Unstructured // the index read gives this older version of cached
		deleted bool                       // the cache reported the written object deleted
		want    string                     // resourceVersion seen, "" for none
	}{
		{name: "not in the cache yet", written: childObject("a", "5", mine), want: "5"},
		{name: "cache behind the write", written: childObject("a", "5", mine), cached: childObject("a", "4", mine), want: "5"},
		{name: "cache caught up", written: childObject("a", "5", mine), cached: childObject("a", "5", mine), want: "5"},
		{name: "cache ahead", written: childObject("a", "5", mine), cached: childObject("a", "7", mine), want: "7"},
		{name: "reached the cache between the reads", written: childObject("a", "5", mine),
			cached: childObject("a", "5", mine), stale: true, want: "5"},
		{name: "name now another parent's", written: childObject("a", "5", mine),
			cached: childObject("a", "9", theirs), stale: true},
		{name: "deleted", written: childObject("a", "5", mine), deleted: true},
		{name: "only in the cache", cached: childObject("a", "3", mine), want: "3"},
		{name: "echo reached the cache between the reads", written: childObject("a", "5", mine), deleted: true,
			cached: childObject("a", "5", mine), behind: childObject("a", "4", mine), want: "5"},
		{name: "cache moved on between the reads", cached: childObject("a", "6", mine),
			behind: childObject("a", "4", mine), want: "6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if err := index.RegisterChildIndexes(indexes{store}); err != nil {
				t.Fatal(err)
			}
			r := &Runner{overlay: newWrittenOverlay()}
			if tt.written != nil {
				recordWrite(r.overlay, 0, mine, tt.written.DeepCopy())
				if tt.deleted {
					r.overlay.deleted(0, tt.written)
				}
			}
			if tt.cached != nil {
				if err := store.Add(tt.cached); err != nil {
					t.Fatal(err)
				}
			}
			var idx cache.Indexer = store
			if tt.stale {
				idx = staleIndex{store}
			}
			if tt.behind != nil {
				idx = behindIndex{store, tt.behind}
			}
			plan := claimPlan{observed: map[int][]*unstructured.Unstructured{}}
			r.gatherRule(&plan, 0, true, idx, parent, p)
			var got []string
			for _, o := range plan.observed[0] {
				got = append(got, o.GetResourceVersion())
			}
			switch {
			case tt.want == "" && len(got) != 0:
				t.Errorf("observed versions %v, want none", got)
			case tt.want != "" && (len(got) != 1 || got[0] != tt.want):
				t.Errorf("observed versions %v, want [%s]", got, tt.want)
			}
			if len(plan.adopt)+len(plan.release) != 0 {
				t.Errorf("claims planned: adopt %v, release %v", plan.adopt, plan.release)
			}
		})
	}
}

// TestWaitingParentsWakeOnDelete checks that a parent refused a child name is named once
// when the object holding the name is deleted, and not after it was forgotten.
func TestWaitingParentsWakeOnDelete(t *testing.T) {
	o := newWrittenOverlay()
	a, b := Request{Key: "ns/a"}, Request{Key: "ns/b"}
	o.waitFor(0, "ns", "x", a)
	o.waitFor(0, "ns", "x", b)
	o.waitFor(0, "ns", "x", a)
	o.forgetParent(b, "uid-b")
	holder := childObject("x", "1", "someone")
	if got := o.deleted(1, holder); len(got) != 0 {
		t.Errorf("another rule's deletion woke %v", got)
	}
	if got := o.deleted(0, holder); len(got) != 1 || got[0] != a {
		t.Errorf("deletion woke %v, want [%v]", got, a)
	}
	if got := o.deleted(0, holder); len(got) != 0 {
		t.Errorf("second deletion woke %v", got)
	}
}

// TestOverlayWrittenByParent checks that the written children are listed per parent and
// rule, follow an object written again by another parent, and go with their parent.
func TestOverlayWrittenByParent(t *testing.T) {
	o := newWrittenOverlay()
	names := func(objs []*unstructured.Unstructured) map[string]bool {
		out := map[string]bool{}
		for _, u := range objs {
			out[u.GetName()] = true
		}
		return out
	}
	recordWrite(o, 0, "a", childObject("x", "1", "a"))
	recordWrite(o, 0, "a", childObject("y", "2", "a"))
	recordWrite(o, 1, "a", childObject("z", "3", "a"))
	recordWrite(o, 0, "b", childObject("w", "4", "b"))
	if got := names(o.written("a", 0)); len(got) != 2 || !got["x"] || !got["y"] {
		t.Errorf("written(a, 0) = %v, want x and y", got)
	}
	recordWrite(o, 0, "b", childObject("y", "5", "b")) // y written again, now by b
	if got := names(o.written("a", 0)); len(got) != 1 || !got["x"] {
		t.Errorf("after b wrote y: written(a, 0) = %v, want x", got)
	}
	if got := names(o.written("b", 0)); len(got) != 2 || !got["w"] || !got["y"] {
		t.Errorf("written(b, 0) = %v, want w and y", got)
	}
	o.forgetParent(Request{Key: "ns/a"}, "a")
	if got := o.written("a", 1); len(got) != 0 {
		t.Errorf("after forgetting a: written(a, 1) = %v", names(got))
	}
	if got := names(o.written("b", 0)); len(got) != 2 {
		t.Errorf("forgetting a dropped b's: written(b, 0) = %v", got)
	}
	if len(o.objects) != 2 || len(o.byParent) != 1 {
		t.Errorf("%d objects under %d parents left, want 2 under 1", len(o.objects), len(o.byParent))
	}
}

// recordWrite is a write of parent's child that the server answered with stored, no event of it
// having come while it was in flight.
func recordWrite(o *writtenOverlay, rule int, parent types.UID, stored *unstructured.Unstructured) {
	o.beginChild(rule, stored.GetNamespace(), stored.GetName())
	o.endChild(rule, stored.GetNamespace(), stored.GetName(), parent, stored)
}

// TestOverlayEchoes checks that the echo of the engine's own write is recognised whether it
// arrives before the server's answer, after it, or after a reconcile read the cache that the
// echo updated; and that another change arriving in flight is not taken for one.
func TestOverlayEchoes(t *testing.T) {
	const parent = types.UID("p")
	v := func(rv string) *unstructured.Unstructured { return childObject("a", rv, parent) }
	tests := []struct {
		name string
		// before is the answer of a write before this one, whose echo has not come yet.
		before string
		// inFlight are the versions whose events arrive before the answer (version 5).
		inFlight []string
		// cacheRead is a version a reconcile reads from the cache after the answer.
		cacheRead string
		// after are the versions whose events arrive after the answer.
		after []string
		// wantEchoes says, per event in order (in flight, then after), whether it is an echo.
		wantEchoes []bool
		wantAgain  bool // the parent must be reconciled again when the write lands
	}{
		{name: "echo after the answer", after: []string{"5"}, wantEchoes: []bool{true}},
		{name: "echo before the answer", inFlight: []string{"5"}, wantEchoes: []bool{true}},
		{name: "echo after a reconcile read the cache", cacheRead: "5", after: []string{"5"}, wantEchoes: []bool{true}},
		{name: "another change in flight", inFlight: []string{"5", "6"}, wantEchoes: []bool{true, true}, wantAgain: true},
		{name: "another change after the echo", after: []string{"5", "6"}, wantEchoes: []bool{true, false}},
		{name: "an older event in flight", inFlight: []string{"4"}, after: []string{"5"}, wantEchoes: []bool{true, true}, wantAgain: true},
		{name: "an older event and the echo in flight", inFlight: []string{"4", "5"}, wantEchoes: []bool{true, true}, wantAgain: true},
		{name: "the echo of the write before, in flight", before: "3", inFlight: []string{"3", "5"}, wantEchoes: []bool{true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newWrittenOverlay()
			if tt.before != "" {
				recordWrite(o, 0, parent, v(tt.before))
			}
			var got []bool
			o.beginChild(0, "ns", "a")
			for _, rv := range tt.inFlight {
				got = append(got, o.echo(0, v(rv)))
			}
			if again := o.endChild(0, "ns", "a", parent, v("5")); again != tt.wantAgain {
				t.Errorf("endChild says reconcile again: %v, want %v", again, tt.wantAgain)
			}
			if tt.cacheRead != "" {
				if _, newer := o.view(0, parent, "ns", "a", v(tt.cacheRead)); newer {
					t.Errorf("view of a cache at the written version says the overlay is newer")
				}
			}
			for _, rv := range tt.after {
				got = append(got, o.echo(0, v(rv)))
			}
			if !slices.Equal(got, tt.wantEchoes) {
				t.Errorf("echoes %v, want %v", got, tt.wantEchoes)
			}
		})
	}
}
