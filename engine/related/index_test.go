package related

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/engine/resources"
)

var configMaps = resources.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
	GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespaced: true}

var secrets = resources.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"},
	GVK: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, Namespaced: true}

func cmIn(ns, name string, lbls map[string]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	o.SetNamespace(ns)
	o.SetName(name)
	o.SetLabels(lbls)
	return o
}

func noNamespaces(string) (map[string]string, bool) { return nil, false }

func TestIndexRoutesAndBinds(t *testing.T) {
	x := newIndex[string]()
	p1, p2 := "ns/p1", "ns/p2"
	byName := Rule{Resource: configMaps, Namespace: "ns", Names: []string{"a"}}
	bySel := Rule{Resource: configMaps, Namespace: "ns", Selector: labels.SelectorFromSet(labels.Set{"app": "x"})}
	everywhere := Rule{Resource: configMaps, Selector: labels.Everything()}
	x.record(p1, []Rule{byName})
	x.record(p2, []Rule{bySel})
	route := func(o *unstructured.Unstructured) []string {
		out := x.route(configMaps.GVR, o, noNamespaces)
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		obj  *unstructured.Unstructured
		want []string
	}{
		{cmIn("ns", "a", nil), []string{"ns/p1"}},
		{cmIn("ns", "a", map[string]string{"app": "x"}), []string{"ns/p1", "ns/p2"}},
		{cmIn("ns", "b", map[string]string{"app": "x"}), []string{"ns/p2"}},
		{cmIn("ns", "b", map[string]string{"app": "y"}), nil},
		{cmIn("other", "a", map[string]string{"app": "x"}), nil},
	} {
		if got := route(tc.obj); !slices.Equal(got, tc.want) {
			t.Errorf("route(%s/%s %v) = %v, want %v", tc.obj.GetNamespace(), tc.obj.GetName(), tc.obj.GetLabels(), got, tc.want)
		}
	}
	if got := x.route(secrets.GVR, cmIn("ns", "a", nil), noNamespaces); len(got) != 0 {
		t.Errorf("an object of another resource was routed to %v", got)
	}
	// Bound references: p1's old rule routes until new rules are recorded, then only those.
	if old := x.record(p1, []Rule{everywhere}); len(old) != 1 || old[0].Names[0] != "a" {
		t.Fatalf("record returned %v as the old rules", old)
	}
	if got := route(cmIn("elsewhere", "z", nil)); !slices.Equal(got, []string{"ns/p1"}) {
		t.Errorf("new rule over every namespace: routed to %v", got)
	}
	x.record(p1, nil)
	if got := route(cmIn("ns", "a", nil)); got != nil {
		t.Errorf("a forgotten parent is still routed to: %v", got)
	}
	if len(x.keys) != 1 {
		t.Errorf("%d keys left after p1 was forgotten, want p2's one: %v", len(x.keys), x.keys)
	}
}

func TestIndexNamespaceSelector(t *testing.T) {
	x := newIndex[string]()
	p := "p"
	x.record(p, []Rule{{Resource: configMaps, Selector: labels.Everything(),
		NamespaceSelector: labels.SelectorFromSet(labels.Set{"team": "a"})}})
	teams := map[string]map[string]string{"ns-a": {"team": "a"}, "ns-b": {"team": "b"}}
	nsLabels := func(ns string) (map[string]string, bool) { l, ok := teams[ns]; return l, ok }
	if got := x.route(configMaps.GVR, cmIn("ns-a", "c", nil), nsLabels); len(got) != 1 {
		t.Errorf("object in a selected namespace routed to %v", got)
	}
	if got := x.route(configMaps.GVR, cmIn("ns-b", "c", nil), nsLabels); len(got) != 0 {
		t.Errorf("object in another namespace routed to %v", got)
	}
	if got := x.namespaceLabelUsers(); len(got) != 1 || got[0] != p {
		t.Errorf("namespaceLabelUsers = %v", got)
	}
}

// parentKey has the shape of the parents' keys a Runner's tracker indexes (reconcile.Request).
type parentKey struct {
	resource int
	key      string
}

// BenchmarkRoute is the cost of routing one related object's event with N parents indexed,
// each selecting its own object by name or by label: it must not grow with N.
func BenchmarkRoute(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		for _, by := range []string{"name", "label"} {
			b.Run(fmt.Sprintf("parents=%d/%s", n, by), func(b *testing.B) {
				x := newIndex[parentKey]()
				for i := range n {
					r := Rule{Resource: configMaps, Namespace: "ns"}
					if by == "name" {
						r.Names = []string{fmt.Sprintf("obj-%d", i)}
					} else {
						r.Selector = labels.SelectorFromSet(labels.Set{"owner": fmt.Sprintf("p-%d", i)})
					}
					x.record(parentKey{key: fmt.Sprintf("ns/p-%d", i)}, []Rule{r})
				}
				obj := cmIn("ns", fmt.Sprintf("obj-%d", n/2), map[string]string{"owner": fmt.Sprintf("p-%d", n/2), "app": "web"})
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if got := x.route(configMaps.GVR, obj, noNamespaces); len(got) != 1 {
						b.Fatalf("routed to %v", got)
					}
				}
			})
		}
	}
}
