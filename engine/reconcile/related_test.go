package reconcile

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/resources"
)

var configMaps = protocol.ChildRule{Resource: resources.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
	GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespaced: true}}

func parentIn(ns string) *unstructured.Unstructured {
	p := &unstructured.Unstructured{}
	p.SetName("p")
	p.SetNamespace(ns)
	return p
}

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

func TestRelatedIndexRoutesAndBinds(t *testing.T) {
	x := newRelatedIndex()
	p1, p2 := Request{Key: "ns/p1"}, Request{Key: "ns/p2"}
	byName := RelatedRule{Resource: configMaps.Resource, Namespace: "ns", Names: []string{"a"}}
	bySel := RelatedRule{Resource: configMaps.Resource, Namespace: "ns", Selector: labels.SelectorFromSet(labels.Set{"app": "x"})}
	everywhere := RelatedRule{Resource: configMaps.Resource, Selector: labels.Everything()}
	x.record(p1, []RelatedRule{byName})
	x.record(p2, []RelatedRule{bySel})
	route := func(o *unstructured.Unstructured) []string {
		var out []string
		for _, r := range x.route(configMaps.GVR, o, noNamespaces) {
			out = append(out, r.Key)
		}
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
	if old := x.record(p1, []RelatedRule{everywhere}); len(old) != 1 || old[0].Names[0] != "a" {
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

func TestRelatedIndexNamespaceSelector(t *testing.T) {
	x := newRelatedIndex()
	p := Request{Key: "p"}
	x.record(p, []RelatedRule{{Resource: configMaps.Resource, Selector: labels.Everything(),
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

// BenchmarkRelatedRoute is the cost of routing one related object's event with N parents
// indexed, each selecting its own object by name or by label: it must not grow with N.
func BenchmarkRelatedRoute(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		for _, by := range []string{"name", "label"} {
			b.Run(fmt.Sprintf("parents=%d/%s", n, by), func(b *testing.B) {
				x := newRelatedIndex()
				for i := range n {
					r := RelatedRule{Resource: configMaps.Resource, Namespace: "ns"}
					if by == "name" {
						r.Names = []string{fmt.Sprintf("obj-%d", i)}
					} else {
						r.Selector = labels.SelectorFromSet(labels.Set{"owner": fmt.Sprintf("p-%d", i)})
					}
					x.record(Request{Key: fmt.Sprintf("ns/p-%d", i)}, []RelatedRule{r})
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

func TestParseCustomizeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		parent *unstructured.Unstructured
		resp   map[string]any
		want   string
	}{
		{"unknown field", parentIn("ns"), map[string]any{"related": []any{}}, "related: unknown field"},
		{"not a list", parentIn("ns"), map[string]any{"relatedResources": map[string]any{}}, "relatedResources: expected a list"},
		{"rule unknown field", parentIn("ns"), map[string]any{"relatedResources": []any{map[string]any{"apiVersion": "v1", "resource": "configmaps", "names": []any{"a"}, "nmes": 1}}},
			"relatedResources[0].nmes: unknown field"},
		{"names and selector", parentIn("ns"), map[string]any{"relatedResources": []any{map[string]any{"apiVersion": "v1", "resource": "configmaps",
			"names": []any{"a"}, "labelSelector": map[string]any{}}}}, "relatedResources[0]: labelSelector and names are mutually exclusive"},
		{"another namespace", parentIn("ns"), map[string]any{"relatedResources": []any{map[string]any{"apiVersion": "v1", "resource": "configmaps",
			"names": []any{"a"}, "namespace": "other"}}}, `a namespaced parent's related objects are in its own namespace "ns"`},
		{"bad selector", parentIn(""), map[string]any{"relatedResources": []any{map[string]any{"apiVersion": "v1", "resource": "configmaps",
			"labelSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": "k", "operator": "Near"}}}}}}, "relatedResources[0].labelSelector"},
		{"namespace and namespaceSelector", parentIn(""), map[string]any{"relatedResources": []any{map[string]any{"apiVersion": "v1", "resource": "configmaps",
			"names": []any{"a"}, "namespace": "x", "namespaceSelector": map[string]any{}}}}, "namespace and namespaceSelector are mutually exclusive"},
		{"empty names", parentIn("ns"), map[string]any{"relatedResources": []any{map[string]any{"apiVersion": "v1", "resource": "configmaps", "names": []any{}}}},
			"relatedResources[0].names: expected a list of names"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseCustomize(tc.resp, tc.parent, fakeResolver{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

type fakeResolver struct{}

func (fakeResolver) Resolve(apiVersion, resource string) (resources.Resource, error) {
	if apiVersion == "v1" && resource == "configmaps" {
		return configMaps.Resource, nil
	}
	return resources.Resource{}, &resources.NotFoundError{APIVersion: apiVersion, Resource: resource}
}

func TestParseCustomizeAccepts(t *testing.T) {
	rules, err := parseCustomize(map[string]any{"relatedResources": []any{
		map[string]any{"apiVersion": "v1", "resource": "configmaps", "names": []any{"a", "b"}},
		map[string]any{"apiVersion": "v1", "resource": "configmaps", "labelSelector": map[string]any{"matchLabels": map[string]any{"x": "y"}}},
	}}, parentIn("ns"), fakeResolver{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 || rules[0].Namespace != "ns" || !slices.Equal(rules[0].Names, []string{"a", "b"}) ||
		!rules[1].Selector.Matches(labels.Set{"x": "y"}) || rules[1].Namespace != "ns" {
		t.Fatalf("rules = %+v", rules)
	}
	// Neither labelSelector nor names: every object, as Metacontroller selects.
	all, err := parseCustomize(map[string]any{"relatedResources": []any{
		map[string]any{"apiVersion": "v1", "resource": "configmaps"}}}, parentIn("ns"), fakeResolver{})
	if err != nil || len(all) != 1 || !all[0].Selector.Empty() || all[0].Namespace != "ns" {
		t.Fatalf("a rule of only a resource: %+v, %v", all, err)
	}
	if _, err := parseCustomize(map[string]any{"relatedResources": []any{map[string]any{"apiVersion": "v9", "resource": "things",
		"names": []any{"a"}}}}, parentIn("ns"), fakeResolver{}); err == nil || !strings.Contains(err.Error(), "not served") {
		t.Fatalf("an unknown resource: %v", err)
	}
}
