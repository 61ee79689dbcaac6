package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/reconcile"
)

// Churn says what rendering r of parent (as observed) changes, one line per object, each
// naming the fields that change: what keeps changing when renders do not settle. A round
// that creates some children and deletes others of the same kind is a hook whose names
// change at every call, and says so.
func Churn(r *reconcile.Rendering, parentDesc string, parent *unstructured.Unstructured) []string {
	var out []string
	created, deleted := map[string]bool{}, map[string]bool{}
	for _, c := range r.Adopt {
		out = append(out, "adopt "+c.Resource.Describe(c.Object))
	}
	for _, c := range r.Release {
		out = append(out, "release "+c.Resource.Describe(c.Object))
	}
	for _, w := range r.Children {
		desc := w.Rule.Describe(w.Object)
		switch w.Action {
		case apply.Created:
			out = append(out, "create "+desc)
			created[w.Rule.GVK.Kind] = true
		case apply.Deleted:
			out = append(out, "delete "+desc)
			deleted[w.Rule.GVK.Kind] = true
		case apply.Updated:
			paths := changedPaths(w.Object.Object, w.Observed.Object, "", false)
			paths = slices.DeleteFunc(paths, func(p string) bool {
				return p == "metadata.annotations."+apply.AppliedHashAnnotation
			})
			out = append(out, fmt.Sprintf("update %s: %s", desc, strings.Join(paths, ", ")))
		}
	}
	for kind := range created {
		if deleted[kind] {
			out = append(out, fmt.Sprintf("names of %s children change at every call: a hook makes them from something that changes (a clock, a counter, a random value)", kind))
		}
	}
	if r.ParentChanged {
		var paths []string
		for _, field := range []string{"metadata", "status"} {
			paths = append(paths, changedPaths(r.Parent.Object[field], parent.Object[field], field, true)...)
		}
		what := "parent"
		if len(paths) > 0 && !slices.ContainsFunc(paths, func(p string) bool { return !strings.HasPrefix(p, "status") }) {
			what = "status churn"
		}
		out = append(out, fmt.Sprintf("%s %s: %s", what, parentDesc, strings.Join(paths, ", ")))
	}
	return out
}

// changedPaths lists the paths (a.b.c, a[2] for a list whose items differ) where want and
// have differ as JSON values: every key of want, and with both every key of have too.
func changedPaths(want, have any, path string, both bool) []string {
	wm, wok := want.(map[string]any)
	hm, hok := have.(map[string]any)
	if !wok || !hok {
		if protocol.SameJSON(want, have) {
			return nil
		}
		if path == "" {
			path = "."
		}
		return []string{path}
	}
	keys := slices.Collect(maps.Keys(wm))
	if both {
		for k := range hm {
			if _, ok := wm[k]; !ok {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		p := k
		if path != "" {
			p = path + "." + k
		}
		out = append(out, changedPaths(wm[k], hm[k], p, both)...)
	}
	return out
}
