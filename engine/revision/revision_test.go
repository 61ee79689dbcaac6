package revision

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func parent() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "p"},
		"spec": map[string]any{
			"replicas": int64(3),
			"template": map[string]any{"image": "v2"},
		},
	}}
}

func TestPatchApply(t *testing.T) {
	paths := []string{"spec.template"}
	p := Patch(parent(), paths)
	if !reflect.DeepEqual(p, map[string]any{"spec": map[string]any{"template": map[string]any{"image": "v2"}}}) {
		t.Fatalf("Patch = %v", p)
	}
	old := map[string]any{"spec": map[string]any{"template": map[string]any{"image": "v1"}}}
	got := Apply(parent(), old, paths)
	if img, _, _ := unstructured.NestedString(got.Object, "spec", "template", "image"); img != "v1" {
		t.Fatalf("Apply: image %q, want v1", img)
	}
	if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); r != 3 {
		t.Fatalf("Apply changed a field outside the paths: replicas %d", r)
	}
	if got := Apply(parent(), map[string]any{}, paths); got.Object["spec"].(map[string]any)["template"] != nil {
		t.Fatalf("a path the patch lacks is kept: %v", got.Object)
	}
	if Hash(p) == Hash(old) || Hash(p) != Hash(Patch(parent(), paths)) {
		t.Fatal("Hash does not tell patches apart, or is not stable")
	}
}

func TestName(t *testing.T) {
	if n := Name("web", "abc"); n != "web-abc" {
		t.Errorf("Name = %q", n)
	}
	long := strings.Repeat("a", 260)
	if n := Name(long, "0123456789"); len(n) > 253 || !strings.HasSuffix(n, "-0123456789") || n == Name(strings.Repeat("a", 259)+"b", "0123456789") {
		t.Errorf("Name(long) = %q (%d)", n, len(n))
	}
}

func c(name string) Child { return Child{Kind: "Pod", Name: name} }

func TestPlan(t *testing.T) {
	desired := []Child{c("p-0"), c("p-1"), c("p-2")}
	all := func(Child) bool { return true }
	for _, tc := range []struct {
		name    string
		owner   map[Child]string
		exists  func(Child) bool
		failing string
		moved   string
		blocker string
		updated int
	}{
		{"first move", map[Child]string{c("p-0"): "old", c("p-1"): "old", c("p-2"): "old"}, all, "", "p-0", "", 1},
		{"next move once the updated one passes", map[Child]string{c("p-0"): "new", c("p-1"): "old", c("p-2"): "old"}, all, "", "p-1", "", 2},
		{"paused by a failing updated child", map[Child]string{c("p-0"): "new", c("p-1"): "old", c("p-2"): "old"}, all, "p-0", "", "p-0", 1},
		{"an old child failing does not pause", map[Child]string{c("p-0"): "new", c("p-1"): "old", c("p-2"): "old"}, all, "p-2", "p-1", "", 2},
		{"paused while an updated child is being recreated", map[Child]string{c("p-0"): "new", c("p-1"): "old", c("p-2"): "old"},
			func(x Child) bool { return x.Name != "p-0" }, "", "", "p-0", 1},
		{"done", map[Child]string{c("p-0"): "new", c("p-1"): "new", c("p-2"): "new"}, all, "", "", "", 3},
		{"nothing left to roll, a child not Ready yet", map[Child]string{c("p-0"): "new", c("p-1"): "new", c("p-2"): "new"},
			all, "p-1", "", "p-1", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(x Child) (bool, string) {
				if x.Name == tc.failing {
					return false, "condition Ready is False"
				}
				return true, ""
			}
			s := Plan("new", tc.owner, desired, tc.exists, check)
			got := func(p *Child) string {
				if p == nil {
					return ""
				}
				return p.Name
			}
			if got(s.Moved) != tc.moved || got(s.Blocker) != tc.blocker || s.Updated != tc.updated || s.Total != 3 {
				t.Fatalf("Plan = moved %q, blocker %q (%s), %d/%d; want moved %q, blocker %q, %d/3",
					got(s.Moved), got(s.Blocker), s.Why, s.Updated, s.Total, tc.moved, tc.blocker, tc.updated)
			}
			if tc.moved != "" && tc.owner[c(tc.moved)] != "new" {
				t.Fatal("the moved child's owner was not updated")
			}
		})
	}
}

func TestRecord(t *testing.T) {
	all := func(Child) bool { return true }
	old := Revision{Name: "p-old", Revision: 1, Patch: map[string]any{"v": "1"}, Children: []Child{c("p-0"), c("p-1")}}
	// A new latest: created with the next number, listing its children; the old one keeps
	// what it still owns.
	w := Record([]Revision{old}, "p-new", map[string]any{"v": "2"}, map[Child]string{c("p-0"): "p-new", c("p-1"): "p-old"}, all)
	if len(w.Create) != 1 || w.Create[0].Revision != 2 || fmt.Sprint(w.Create[0].Children) != fmt.Sprint([]Child{c("p-0")}) {
		t.Fatalf("Create = %+v", w.Create)
	}
	if len(w.Update) != 1 || w.Update[0].Name != "p-old" || fmt.Sprint(w.Update[0].Children) != fmt.Sprint([]Child{c("p-1")}) {
		t.Fatalf("Update = %+v", w.Update)
	}
	// The last child moves: the old revision is deleted.
	cur := Revision{Name: "p-new", Revision: 2, Children: []Child{c("p-0")}}
	w = Record([]Revision{old, cur}, "p-new", nil, map[Child]string{c("p-0"): "p-new", c("p-1"): "p-new"}, all)
	if len(w.Delete) != 1 || w.Delete[0].Name != "p-old" || len(w.Update) != 1 || len(w.Update[0].Children) != 2 {
		t.Fatalf("Writes = %+v", w)
	}
	// Nothing changed: nothing to write.
	done := Revision{Name: "p-new", Revision: 2, Children: []Child{c("p-0"), c("p-1")}}
	if w := Record([]Revision{done}, "p-new", nil, map[Child]string{c("p-0"): "p-new", c("p-1"): "p-new"}, all); len(w.Create)+len(w.Update)+len(w.Delete) != 0 {
		t.Fatalf("converged: %+v", w)
	}
	// Rollback: an old patch's revision becomes the newest again.
	w = Record([]Revision{old, done}, "p-old", nil, map[Child]string{c("p-0"): "p-new", c("p-1"): "p-new"}, all)
	if len(w.Update) != 1 || w.Update[0].Name != "p-old" || w.Update[0].Revision != 3 {
		t.Fatalf("rollback: %+v", w)
	}
}

func TestAssign(t *testing.T) {
	revs := []Revision{
		{Name: "a", Revision: 1, Children: []Child{c("x"), c("y")}},
		{Name: "b", Revision: 2, Children: []Child{c("y")}}, // a crash left y in both: the newer wins
	}
	got := Assign(revs, "b", []Child{c("x"), c("y"), c("z")})
	want := map[Child]string{c("x"): "a", c("y"): "b", c("z"): "b"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Assign = %v, want %v", got, want)
	}
}
