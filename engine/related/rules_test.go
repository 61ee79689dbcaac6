package related

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"metascript.dev/metascript/engine/resources"
)

func parentIn(ns string) *unstructured.Unstructured {
	p := &unstructured.Unstructured{}
	p.SetName("p")
	p.SetNamespace(ns)
	return p
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
			_, err := parseCustomize(tc.resp, tc.parent, fakeResolver{}, OwnNamespace)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

type fakeResolver struct{}

func (fakeResolver) Resolve(apiVersion, resource string) (resources.Resource, error) {
	if apiVersion == "v1" && resource == "configmaps" {
		return configMaps, nil
	}
	return resources.Resource{}, &resources.NotFoundError{APIVersion: apiVersion, Resource: resource}
}

func TestParseCustomizeAccepts(t *testing.T) {
	rules, err := parseCustomize(map[string]any{"relatedResources": []any{
		map[string]any{"apiVersion": "v1", "resource": "configmaps", "names": []any{"a", "b"}},
		map[string]any{"apiVersion": "v1", "resource": "configmaps", "labelSelector": map[string]any{"matchLabels": map[string]any{"x": "y"}}},
	}}, parentIn("ns"), fakeResolver{}, OwnNamespace)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 || rules[0].Namespace != "ns" || !slices.Equal(rules[0].Names, []string{"a", "b"}) ||
		!rules[1].Selector.Matches(labels.Set{"x": "y"}) || rules[1].Namespace != "ns" {
		t.Fatalf("rules = %+v", rules)
	}
	// Neither labelSelector nor names: every object, as Metacontroller selects.
	all, err := parseCustomize(map[string]any{"relatedResources": []any{
		map[string]any{"apiVersion": "v1", "resource": "configmaps"}}}, parentIn("ns"), fakeResolver{}, OwnNamespace)
	if err != nil || len(all) != 1 || !all[0].Selector.Empty() || all[0].Namespace != "ns" {
		t.Fatalf("a rule of only a resource: %+v, %v", all, err)
	}
	if _, err := parseCustomize(map[string]any{"relatedResources": []any{map[string]any{"apiVersion": "v9", "resource": "things",
		"names": []any{"a"}}}}, parentIn("ns"), fakeResolver{}, OwnNamespace); err == nil || !strings.Contains(err.Error(), "not served") {
		t.Fatalf("an unknown resource: %v", err)
	}
}

// TestParseCustomizeReach: a namespaced parent's rules select in its own namespace unless
// its controller's hooks may reach beyond it, as a cluster-scoped parent's do then.
func TestParseCustomizeReach(t *testing.T) {
	cm := func(extra map[string]any) map[string]any {
		m := map[string]any{"apiVersion": "v1", "resource": "configmaps"}
		for k, v := range extra {
			m[k] = v
		}
		return map[string]any{"relatedResources": []any{m}}
	}
	sel := map[string]any{"matchLabels": map[string]any{"app": "x"}}
	for _, tc := range []struct {
		name      string
		reach     Reach
		resp      map[string]any
		namespace string // the rule's Namespace; "" every namespace
		nsSel     bool
		err       string
	}{
		{"own: labels only", OwnNamespace, cm(map[string]any{"labelSelector": sel}), "ns", false, ""},
		{"own: names only", OwnNamespace, cm(map[string]any{"names": []any{"a"}}), "ns", false, ""},
		{"own: its own namespace named", OwnNamespace, cm(map[string]any{"names": []any{"a"}, "namespace": "ns"}), "ns", false, ""},
		{"own: another namespace", OwnNamespace, cm(map[string]any{"names": []any{"a"}, "namespace": "other"}), "", false, "in its own namespace"},
		{"own: namespaceSelector", OwnNamespace, cm(map[string]any{"namespaceSelector": sel}), "", false, "in its own namespace"},
		{"any: labels only selects every namespace", AnyNamespace, cm(map[string]any{"labelSelector": sel}), "", false, ""},
		{"any: names only selects every namespace", AnyNamespace, cm(map[string]any{"names": []any{"a"}}), "", false, ""},
		{"any: another namespace", AnyNamespace, cm(map[string]any{"labelSelector": sel, "namespace": "other"}), "other", false, ""},
		{"any: namespaceSelector", AnyNamespace, cm(map[string]any{"namespaceSelector": sel}), "", true, ""},
		{"any: namespace and namespaceSelector", AnyNamespace, cm(map[string]any{"namespace": "o", "namespaceSelector": sel}), "", false, "mutually exclusive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := parseCustomize(tc.resp, parentIn("ns"), fakeResolver{}, tc.reach)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rules[0].Namespace != tc.namespace || (rules[0].NamespaceSelector != nil) != tc.nsSel {
				t.Fatalf("rule %+v: want namespace %q, namespaceSelector %v", rules[0], tc.namespace, tc.nsSel)
			}
		})
	}
}
