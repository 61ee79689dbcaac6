package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/resources"
)

// Result is what a run of renders did: the state observed and the state left, the parent
// as observed and as left (nil when it is gone), what was written, and the last rendering.
type Result struct {
	Before, After   *State
	ParentResource  resources.Resource
	Parent0, Parent *unstructured.Unstructured
	History         *History
	Last            *reconcile.Rendering
}

// Change is one document of a render's output: what happens to one object (Render says
// what: create, update, delete, adopt, release, skip, error, parent, related, event, resync), its
// fields in order, and the object before and after for --diff (nil: none).
type Change struct {
	Render, Resource string
	Fields           []Field
	Before, After    *unstructured.Unstructured
}

// field is the value of the field of c named name; nil when there is none.
func (c Change) field(name string) any {
	for _, f := range c.Fields {
		if f.Name == name {
			return f.Value
		}
	}
	return nil
}

// Field is one field of a Change.
type Field struct {
	Name  string
	Value any
}

// entryKey names an object of gvr in a State and a History.
func entryKey(gvr schema.GroupVersionResource, u *unstructured.Unstructured) string {
	return gvr.String() + " " + key(u)
}

// Changes lists the documents of r: the children adopted or released, and created, updated
// or deleted, from the first state to the last, in the order they first changed (a create
// says its wave, the round it was created in, when children were created in several); the parent's
// changed fields; then what the last rendering skipped or could not write, the related
// objects it read and when it asked to be called again.
func Changes(r *Result) []Change {
	var out []Change
	before, after := r.Before.all(), r.After.all()
	waves := r.History.waves(func(k string) bool { return before[k].obj == nil && after[k].obj != nil })
	for _, k := range r.History.order {
		b, a := before[k], after[k]
		var obj *unstructured.Unstructured
		switch {
		case a.obj != nil:
			obj = a.obj
		case b.obj != nil:
			obj = b.obj
		default:
			continue // created, then deleted again
		}
		res, _ := r.After.resolver.ForKind(obj.GetAPIVersion(), obj.GetKind())
		if how := r.History.claims[k]; how != "" {
			out = append(out, Change{Render: how, Resource: res.Describe(obj), Fields: []Field{{"object", identity(obj)}}})
		}
		c := Change{Resource: res.Describe(obj), Before: b.obj, After: a.obj}
		switch {
		case b.obj == nil:
			c.Render, c.Before = "create", nil
			if waves {
				c.Fields = []Field{{"wave", r.History.created[k]}}
			}
			c.Fields = append(c.Fields, Field{"object", r.History.written[k].Object})
		case a.obj == nil:
			c.Render = "delete"
			c.Fields = []Field{{"object", identity(b.obj)}}
		case r.History.written[k] != nil:
			c.Render = "update"
			c.Fields = []Field{{"object", r.History.written[k].Object}}
		default: // adopted or released, and not written
			continue
		}
		out = append(out, c)
	}
	if p := parentChange(r); p != nil {
		out = append(out, *p)
	}
	for _, w := range r.Last.Children {
		switch {
		case w.Err != nil:
			out = append(out, Change{Render: "error", Resource: w.Rule.Describe(w.Object),
				Fields: []Field{{"object", identity(w.Object)}, {"reason", w.Err.Error()}}})
		case w.Action == apply.Skipped:
			reason := fmt.Sprintf("differs from what the hook returns; the update method %s leaves it", w.Rule.Method)
			if w.Observed != nil && w.Observed.GetDeletionTimestamp() != nil {
				reason = "it is being deleted; a later reconcile creates it again once it is gone"
			}
			out = append(out, Change{Render: "skip", Resource: w.Rule.Describe(w.Object),
				Fields: []Field{{"object", identity(w.Object)}, {"reason", reason}}})
		}
	}
	if r.Last.RelatedObjects != nil {
		related := map[string]any{}
		for group, objs := range r.Last.RelatedObjects {
			m, _ := objs.(map[string]any)
			related[group] = slices.Sorted(maps.Keys(m))
		}
		out = append(out, Change{Render: "related", Resource: r.ParentResource.Describe(r.Parent0), Fields: []Field{{"objects", related}}})
	}
	for _, ev := range r.Last.Events {
		out = append(out, Change{Render: "event", Resource: r.ParentResource.Describe(r.Parent0),
			Fields: []Field{{"type", ev.Type}, {"reason", ev.Reason}, {"message", ev.Message}}})
	}
	if r.Last.ResyncAfter > 0 {
		out = append(out, Change{Render: "resync", Resource: r.ParentResource.Describe(r.Parent0),
			Fields: []Field{{"after", r.Last.ResyncAfter.String()}}})
	}
	return out
}

// parentChange is the parent's document: its status, labels, annotations and finalizers
// where they changed, or that it is gone; nil when nothing changed.
func parentChange(r *Result) *Change {
	c := &Change{Render: "parent", Resource: r.ParentResource.Describe(r.Parent0), Before: r.Parent0, After: r.Parent}
	if r.Parent == nil {
		c.Fields = []Field{{"finalizers", []string{}}, {"deleted", true}}
		return c
	}
	for _, f := range []struct {
		name string
		path []string
	}{{"labels", []string{"metadata", "labels"}}, {"annotations", []string{"metadata", "annotations"}},
		{"finalizers", []string{"metadata", "finalizers"}}, {"status", []string{"status"}}} {
		was, _, _ := unstructured.NestedFieldNoCopy(r.Parent0.Object, f.path...)
		now, _, _ := unstructured.NestedFieldNoCopy(r.Parent.Object, f.path...)
		if !protocol.SameJSON(was, now) {
			c.Fields = append(c.Fields, Field{f.name, now})
		}
	}
	if len(c.Fields) == 0 {
		return nil
	}
	return c
}

// identity is the part of obj that names it.
func identity(obj *unstructured.Unstructured) map[string]any {
	meta := map[string]any{"name": obj.GetName()}
	if ns := obj.GetNamespace(); ns != "" {
		meta["namespace"] = ns
	}
	return map[string]any{"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind(), "metadata": meta}
}

// Write writes changes as a YAML document stream after a comment line, header: each
// document starts with `render:` and `resource:`, then the change's fields in order.
func Write(w io.Writer, header string, changes []Change) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", header)
	for _, c := range changes {
		b.WriteString("---\n")
		fields := append([]Field{{"render", c.Render}, {"resource", c.Resource}}, c.Fields...)
		for _, f := range fields {
			data, err := yaml.Marshal(map[string]any{f.Name: f.Value})
			if err != nil {
				return fmt.Errorf("%s %s: %w", c.Render, c.Resource, err)
			}
			b.Write(data)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteDiff writes each change that has an object before or after as a unified diff of the
// two in YAML, labelled observed/RESOURCE and rendered/RESOURCE (/dev/null for none).
func WriteDiff(w io.Writer, changes []Change) error {
	var b strings.Builder
	for _, c := range changes {
		if c.Before == nil && c.After == nil {
			continue
		}
		before, from := "", "/dev/null"
		after, to := "", "/dev/null"
		if c.Before != nil {
			before, from = objectYAML(c.Before), "observed/"+c.Resource
		}
		if c.After != nil {
			after, to = objectYAML(c.After), "rendered/"+c.Resource
		}
		if c.Render == "create" {
			after = objectYAML(c.field("object").(map[string]any))
		}
		b.WriteString(unifiedDiff(from, to, before, after))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// objectYAML is obj in YAML for a diff, without its resourceVersion: every write changes it,
// which says nothing a diff does not show.
func objectYAML[T *unstructured.Unstructured | map[string]any](obj T) string {
	var v any = obj
	if u, ok := v.(*unstructured.Unstructured); ok {
		v = u.Object
	}
	if m, _ := v.(map[string]any); m != nil {
		if meta, ok := m["metadata"].(map[string]any); ok && meta["resourceVersion"] != nil {
			meta = maps.Clone(meta)
			delete(meta, "resourceVersion")
			m = maps.Clone(m)
			m["metadata"] = meta
			v = m
		}
	}
	data, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprintf("# cannot print: %v\n", err)
	}
	return string(data)
}
