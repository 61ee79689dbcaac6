package informers

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/engine/shard"
)

func TestFilterKeep(t *testing.T) {
	app := schema.GroupKind{Group: "example.com", Kind: "App"}
	cluster := schema.GroupKind{Group: "example.com", Kind: "Tenant"}
	apps := resources.Resource{GVK: app.WithVersion("v1"), Namespaced: true}
	tenants := resources.Resource{GVK: cluster.WithVersion("v1")}
	mine := map[string]bool{shard.Key(app, "ns/a"): true, shard.Key(cluster, "t1"): true, shard.Key(app, "ns/self"): true}
	owns := func(k string) bool { return mine[k] }
	obj := func(name, apiVersion, kind, owner string, controller bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetNamespace("ns")
		u.SetName(name)
		if owner != "" {
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner, Controller: &controller}})
		}
		return u
	}
	every := Orphans{Every: true}
	children := newFilter([]Need{{Owners: []resources.Resource{apps, tenants}, Orphans: every}})
	both := newFilter([]Need{{Owners: []resources.Resource{apps}, Orphans: every}, {Parents: app}})
	keyed := newFilter([]Need{{Owners: []resources.Resource{apps}, Orphans: Orphans{Keys: []string{"app"}}},
		{Owners: []resources.Resource{tenants}, Orphans: Orphans{Keys: []string{"tier"}}}})
	named := newFilter([]Need{{Owners: []resources.Resource{apps}, Names: []string{"ns/held"}}})
	labelled := func(u *unstructured.Unstructured, lbls map[string]string) *unstructured.Unstructured {
		u.SetLabels(lbls)
		return u
	}
	for _, c := range []struct {
		name string
		f    *filter
		obj  *unstructured.Unstructured
		want bool
	}{
		{"orphan", children, obj("o", "", "", "", false), true},
		{"not a controller: an orphan", children, obj("o", "example.com/v1", "App", "b", false), true},
		{"child of an owned parent", children, obj("c", "example.com/v1", "App", "a", true), true},
		{"child of a parent owned elsewhere", children, obj("c", "example.com/v1", "App", "b", true), false},
		{"other version, same kind", children, obj("c", "example.com/v2", "App", "a", true), true},
		{"child of a cluster-scoped owned parent", children, obj("c", "example.com/v1", "Tenant", "t1", true), true},
		{"child of a cluster-scoped parent owned elsewhere", children, obj("c", "example.com/v1", "Tenant", "t2", true), false},
		{"another controller's", children, obj("c", "apps/v1", "Deployment", "a", true), false},
		{"a parent is not a child", children, obj("self", "", "", "", false), true},
		{"owned parent", both, obj("self", "apps/v1", "Deployment", "x", true), true},
		{"parent owned elsewhere, child of an owned parent", both, obj("other", "example.com/v1", "App", "a", true), true},
		{"parent owned elsewhere, child of a parent owned elsewhere", both, obj("other", "example.com/v1", "App", "b", true), false},
		{"whole", nil, obj("c", "apps/v1", "Deployment", "a", true), true},
		{"orphan without a key", keyed, obj("o", "", "", "", false), false},
		{"orphan with another key", keyed, labelled(obj("o", "", "", "", false), map[string]string{"role": "x"}), false},
		{"orphan with a key", keyed, labelled(obj("o", "", "", "", false), map[string]string{"role": "x", "tier": "y"}), true},
		{"orphan labelled with a parent's UID", keyed, labelled(obj("o", "", "", "", false), map[string]string{claim.ParentUIDLabel: "u"}), true},
		{"child of an owned parent, no key", keyed, obj("c", "example.com/v1", "App", "a", true), true},
		{"orphan without a key, named", named, obj("held", "", "", "", false), true},
		{"child of a parent owned elsewhere, named", named, obj("held", "example.com/v1", "App", "b", true), true},
		{"orphan without a key, not named", named, obj("o", "", "", "", false), false},
	} {
		if got := c.f.keep(c.obj, owns); got != c.want {
			t.Errorf("%s: keep = %v, want %v", c.name, got, c.want)
		}
	}
	// Without sharing, every parent is this replica's and so is every controlled object.
	for _, c := range []struct {
		name string
		f    *filter
		obj  *unstructured.Unstructured
		want bool
	}{
		{"another controller's child", children, obj("c", "apps/v1", "Deployment", "a", true), true},
		{"child of a parent", keyed, obj("c", "example.com/v1", "App", "b", true), true},
		{"orphan without a key", keyed, obj("o", "", "", "", false), false},
		{"parent", newFilter([]Need{{Parents: app}}), obj("p", "", "", "", false), true},
	} {
		if got := c.f.keep(c.obj, nil); got != c.want {
			t.Errorf("unshared, %s: keep = %v, want %v", c.name, got, c.want)
		}
	}
	if newFilter([]Need{{Parents: app}, {}}) != nil {
		t.Error("a holder needing everything does not make the filter keep everything")
	}
	if !newFilter([]Need{{Parents: app}}).equal(newFilter([]Need{{Parents: app}})) || newFilter(nil).equal(nil) {
		t.Error("equal filters differ, or no needs keeps everything")
	}
	if keyed.equal(newFilter([]Need{{Owners: []resources.Resource{apps, tenants}, Orphans: Orphans{Keys: []string{"app"}}}})) {
		t.Error("filters reading other orphans are equal")
	}
}

func TestOrphansCoverAndUnion(t *testing.T) {
	none, every := Orphans{}, Orphans{Every: true}
	a, ab := Orphans{Keys: []string{"a"}}, Orphans{Keys: []string{"a", "b"}}
	for _, c := range []struct {
		name string
		o, p Orphans
		want bool
	}{
		{"none covers none", none, none, true},
		{"keys cover none", a, none, true},
		{"none covers no key", none, a, false},
		{"fewer keys", a, ab, false},
		{"more keys", ab, a, true},
		{"every covers keys", every, ab, true},
		{"keys do not cover every", ab, every, false},
	} {
		if got := c.o.Covers(c.p); got != c.want {
			t.Errorf("%s: Covers = %v, want %v", c.name, got, c.want)
		}
	}
	if got := a.Union(Orphans{Keys: []string{"b", "a"}}); !slices.Equal(got.Keys, []string{"a", "b"}) || got.Every {
		t.Errorf("union of keys = %+v", got)
	}
	if got := a.Union(every); !got.Every {
		t.Errorf("union with every = %+v", got)
	}
}
