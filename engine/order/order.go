// Package order is the dependency order of a parent's children: a hook's answer may say that
// a child waits for others to be ready before it is created (the response field "order"),
// and the engine then creates children in waves and deletes them in reverse.
//
// Everything here is decided from what is observed, never from what a reconcile remembers:
// a child is created once every child it waits for is observed and passes its readiness
// rule; each written child records the children it waits for in the annotation After, so
// that a child leaving is deleted only once no observed child that waits for it remains.
// The functions are pure; engine/composite carries their decisions out.
package order

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/protocol"
)

// Field is the response field that holds the order.
const Field = "order"

// Key names one child: its group, kind, namespace (empty when cluster-scoped) and name. The
// version does not matter: one object, read at any version, is one child.
type Key struct {
	Group, Kind, Namespace, Name string
}

// KeyOf is obj's key.
func KeyOf(obj *unstructured.Unstructured) Key {
	return Key{Group: groupOf(obj.GetAPIVersion()), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// String names the child as the engine's messages do: "ConfigMap ns/name", "Namespace name".
func (k Key) String() string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

func groupOf(apiVersion string) string {
	if i := strings.IndexByte(apiVersion, '/'); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

// Dependency is one child another waits for, and when it counts as ready.
type Dependency struct {
	Child Key
	// APIVersion is the child's apiVersion as the answer spelled it, for the annotation.
	APIVersion string
	Ready      Rule
}

// Graph is a validated order: for each child that waits, what it waits for, in the order of
// the answer. A nil Graph is an answer without order: nothing waits.
type Graph struct {
	after map[Key][]Dependency
	// waiting lists the keys of after in the answer's order, so that messages repeat.
	waiting []Key
}

// After returns what child waits for; nil when it waits for nothing.
func (g *Graph) After(child Key) []Dependency {
	if g == nil {
		return nil
	}
	return g.after[child]
}

// Parse validates resp's order against children, the answer's children with their
// namespaces set: every key names one of them (a key without namespace names a child of
// defaultNamespace, the parent's, or else a cluster-scoped child), every rule is well formed,
// no child is listed twice, and no child waits for itself through any chain. An invalid order
// is a *protocol.InvalidResponseError at the field's path; a cycle names its members. It
// returns nil when resp has no order (absent or null).
func Parse(resp map[string]any, children []*unstructured.Unstructured, defaultNamespace string) (*Graph, error) {
	raw, ok := resp[Field]
	if !ok || raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, protocol.Invalid(Field, "expected a list, got %s", protocol.TypeName(raw))
	}
	known := make(map[Key]string, len(children)) // key → apiVersion
	for _, c := range children {
		known[KeyOf(c)] = c.GetAPIVersion()
	}
	g := &Graph{after: map[Key][]Dependency{}}
	where := map[Key]string{} // key → path of its entry
	for i, item := range list {
		path := Field + "[" + strconv.Itoa(i) + "]"
		entry, ok := item.(map[string]any)
		if !ok {
			return nil, protocol.Invalid(path, "expected an object, got %s", protocol.TypeName(item))
		}
		if err := protocol.CheckFields(entry, "child", "after"); err != nil {
			return nil, prefixed(path, err)
		}
		child, _, err := parseKey(path+".child", entry["child"], known, defaultNamespace)
		if err != nil {
			return nil, err
		}
		if first, dup := where[child]; dup {
			return nil, protocol.Invalid(path+".child", "%s is listed already at %s; give all it waits for in one entry", child, first)
		}
		where[child] = path
		deps, err := parseAfter(path+".after", entry["after"], known, defaultNamespace)
		if err != nil {
			return nil, err
		}
		g.after[child] = deps
		g.waiting = append(g.waiting, child)
	}
	if cycle := g.cycle(); cycle != nil {
		names := make([]string, len(cycle))
		for i, k := range cycle {
			names[i] = k.String()
		}
		return nil, protocol.Invalid(where[cycle[0]], "a cycle: %s; no child of it could ever be created", strings.Join(names, " waits for "))
	}
	return g, nil
}

// parseAfter reads the list of what one child waits for.
func parseAfter(path string, raw any, known map[Key]string, defaultNamespace string) ([]Dependency, error) {
	list, ok := raw.([]any)
	if !ok {
		if raw == nil {
			return nil, protocol.Invalid(path, "required: a list of {child, ready}")
		}
		return nil, protocol.Invalid(path, "expected a list, got %s", protocol.TypeName(raw))
	}
	deps := make([]Dependency, 0, len(list))
	for j, item := range list {
		p := path + "[" + strconv.Itoa(j) + "]"
		dep, ok := item.(map[string]any)
		if !ok {
			return nil, protocol.Invalid(p, "expected an object, got %s", protocol.TypeName(item))
		}
		if err := protocol.CheckFields(dep, "child", "ready"); err != nil {
			return nil, prefixed(p, err)
		}
		key, apiVersion, err := parseKey(p+".child", dep["child"], known, defaultNamespace)
		if err != nil {
			return nil, err
		}
		for _, d := range deps {
			if d.Child == key {
				return nil, protocol.Invalid(p+".child", "%s is listed twice", key)
			}
		}
		rule, err := parseRule(p+".ready", dep["ready"])
		if err != nil {
			return nil, err
		}
		deps = append(deps, Dependency{Child: key, APIVersion: apiVersion, Ready: rule})
	}
	return deps, nil
}

// parseKey reads a KEY ({apiVersion, kind, name, namespace?}) and finds the child it names
// among known; it returns the child's key and apiVersion.
func parseKey(path string, raw any, known map[Key]string, defaultNamespace string) (Key, string, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		if raw == nil {
			return Key{}, "", protocol.Invalid(path, "required: {apiVersion, kind, name, namespace?} of a child of the answer")
		}
		return Key{}, "", protocol.Invalid(path, "expected an object, got %s", protocol.TypeName(raw))
	}
	if err := protocol.CheckFields(m, "apiVersion", "kind", "name", "namespace"); err != nil {
		return Key{}, "", prefixed(path, err)
	}
	var fields [4]string
	for i, f := range []string{"apiVersion", "kind", "name", "namespace"} {
		v, present := m[f]
		s, isString := v.(string)
		switch {
		case f == "namespace" && (!present || v == nil):
		case !isString:
			return Key{}, "", protocol.Invalid(path+"."+f, "required string")
		case s == "" && f != "namespace":
			return Key{}, "", protocol.Invalid(path+"."+f, "required string")
		}
		fields[i] = s
	}
	apiVersion, kind, name, ns := fields[0], fields[1], fields[2], fields[3]
	key := Key{Group: groupOf(apiVersion), Kind: kind, Namespace: ns, Name: name}
	if ns == "" {
		key.Namespace = defaultNamespace
	}
	asked := key
	if _, ok := known[key]; !ok && ns == "" {
		key.Namespace = "" // a cluster-scoped child
	}
	have, ok := known[key]
	if !ok {
		return Key{}, "", protocol.Invalid(path, "%s %s names no child of this answer's children", apiVersion, asked)
	}
	return key, have, nil
}

// prefixed puts path before the path of err, an *protocol.InvalidResponseError of a field
// inside it (CheckFields reports the field alone).
func prefixed(path string, err error) error {
	if ie, ok := err.(*protocol.InvalidResponseError); ok {
		return &protocol.InvalidResponseError{Path: path + "." + ie.Path, Msg: ie.Msg}
	}
	return err
}

// cycle returns the members of a cycle of g, in waiting order and starting where it was
// entered first, the first again at the end; nil when there is none.
func (g *Graph) cycle() []Key {
	const (
		unseen = iota
		open
		done
	)
	state := map[Key]int{}
	var stack []Key
	var found []Key
	var visit func(k Key) bool
	visit = func(k Key) bool {
		state[k] = open
		stack = append(stack, k)
		for _, d := range g.after[k] {
			switch state[d.Child] {
			case open:
				for i, s := range stack {
					if s == d.Child {
						found = append(append(found, stack[i:]...), d.Child)
						return true
					}
				}
			case unseen:
				if visit(d.Child) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[k] = done
		return false
	}
	for _, k := range g.waiting {
		if state[k] == unseen && visit(k) {
			return found
		}
	}
	return nil
}

// Describe names the rule a dependency must pass, for messages: "to exist", "condition
// Ready True", "status.phase = Active".
func (r Rule) Describe() string {
	switch {
	case r.Path != "":
		return fmt.Sprintf("%s = %v", r.Path, r.Value)
	case len(r.Conditions) > 0:
		parts := make([]string, len(r.Conditions))
		for i, c := range r.Conditions {
			parts[i] = "condition " + c.Type
			if c.Status != nil {
				parts[i] += " " + *c.Status
			}
			if c.Reason != nil {
				parts[i] += " (reason " + *c.Reason + ")"
			}
		}
		return strings.Join(parts, ", ")
	}
	return "to exist"
}
