package protocol

import (
	"strings"
	"testing"

	"metascript.dev/metascript/engine/claim"
)

// TestObjectsBeyond: a rule with Beyond lets objects leave a namespaced parent's namespace
// and labels them; without it they are refused, naming the confining kind when there is one.
func TestObjectsBeyond(t *testing.T) {
	mark := &claim.Mark{Key: "metascript.dev/compositecontroller", Value: "tenants", Label: true}
	parent := parentIn("team-a")
	parent.SetUID("p-uid")
	object := func(kind, namespace, name string, labels map[string]any) any {
		md := map[string]any{"name": name}
		if namespace != "" {
			md["namespace"] = namespace
		}
		if labels != nil {
			md["labels"] = labels
		}
		return map[string]any{"apiVersion": "v1", "kind": kind, "metadata": md}
	}
	beyond := []ChildRule{{Resource: configMaps, Beyond: mark}, {Resource: namespaces, Beyond: mark}}
	resp := map[string]any{"children": []any{
		object("ConfigMap", "", "home", nil),
		object("ConfigMap", "team-a", "home-named", nil),
		object("ConfigMap", "team-b", "away", map[string]any{"app": "a"}),
		object("Namespace", "", "team-c", nil),
	}}
	out, err := Objects(resp, "children", parent, beyond, "childResources", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out[0][:2] {
		if o.GetNamespace() != "team-a" || len(o.GetLabels()) != 0 {
			t.Errorf("%s: namespace %q labels %v, want the parent's namespace and no labels", o.GetName(), o.GetNamespace(), o.GetLabels())
		}
	}
	away, ns := out[0][2], out[1][0]
	for _, o := range []interface {
		GetName() string
		GetLabels() map[string]string
	}{away, ns} {
		l := o.GetLabels()
		if l[claim.ParentUIDLabel] != "p-uid" || l[mark.Key] != mark.Value {
			t.Errorf("%s: labels %v, want the parent UID and the mark", o.GetName(), l)
		}
	}
	if away.GetLabels()["app"] != "a" {
		t.Errorf("away: the hook's own label is gone: %v", away.GetLabels())
	}

	for _, tc := range []struct {
		name  string
		rules []ChildRule
		obj   any
		want  string
	}{
		{"another namespace without Beyond", []ChildRule{{Resource: configMaps}},
			object("ConfigMap", "team-b", "away", nil), `children[0].metadata.namespace: "team-b" differs from the parent's namespace "team-a"`},
		{"another namespace, confined", []ChildRule{{Resource: configMaps, Confined: "NamespacedCompositeController"}},
			object("ConfigMap", "team-b", "away", nil), "a NamespacedCompositeController is confined to its namespace"},
		{"another parent's UID", beyond,
			object("ConfigMap", "team-b", "away", map[string]any{claim.ParentUIDLabel: "other"}), "children[0].metadata.labels.metascript.dev/parent-uid: \"other\" names another parent"},
		{"another controller's mark", beyond,
			object("Namespace", "", "team-c", map[string]any{mark.Key: "other"}), "names another controller"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Objects(map[string]any{"children": []any{tc.obj}}, "children", parent, tc.rules, "childResources", nil, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
