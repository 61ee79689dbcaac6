package order

import (
	"encoding/json"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// AfterAnnotation, on a child the engine wrote, lists the children it waits for as a JSON
// list of keys ({apiVersion, kind, namespace?, name}). It is what ordered deletion reads: a
// child leaving is deleted only once no observed child that lists it remains.
const AfterAnnotation = "metascript.dev/after"

// Unmet is one child a waiting child waits for that is not ready yet, and why.
type Unmet struct {
	Child Key
	Why   string
}

// Unready returns what child waits for that is not ready among observed (the parent's
// children as observed, by key), in the answer's order; nil when it may be created.
func (g *Graph) Unready(child Key, observed map[Key]*unstructured.Unstructured) []Unmet {
	var out []Unmet
	for _, d := range g.After(child) {
		obj := observed[d.Child]
		if obj == nil {
			out = append(out, Unmet{Child: d.Child, Why: "it does not exist yet"})
			continue
		}
		if ok, why := d.Ready.Ready(obj); !ok {
			out = append(out, Unmet{Child: d.Child, Why: why})
		}
	}
	return out
}

// Waiting is a child of the answer that is not created yet because what it waits for is not
// ready.
type Waiting struct {
	Child Key
	Unmet []Unmet
}

// Gate splits desired, the answer's children, into those to write and those that wait: a
// child that is not observed yet waits while anything it waits for is unready; an observed
// child is always written (waiting gates creation only). The order of desired is kept, and
// waiting follows the answer's order.
func (g *Graph) Gate(desired []*unstructured.Unstructured, observed map[Key]*unstructured.Unstructured) (write []*unstructured.Unstructured, waiting []Waiting) {
	if g == nil {
		return desired, nil
	}
	write = desired[:0:0]
	for _, d := range desired {
		k := KeyOf(d)
		if observed[k] == nil {
			if unmet := g.Unready(k, observed); len(unmet) > 0 {
				waiting = append(waiting, Waiting{Child: k, Unmet: unmet})
				continue
			}
		}
		write = append(write, d)
	}
	return write, waiting
}

// Annotate records on child, a desired child about to be written, what it waits for
// (AfterAnnotation), or removes a value the hook set when it waits for nothing: the
// annotation is the engine's.
func (g *Graph) Annotate(child *unstructured.Unstructured) {
	deps := g.After(KeyOf(child))
	meta, _ := child.Object["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	if len(deps) == 0 {
		if _, ok := annotations[AfterAnnotation]; ok {
			delete(annotations, AfterAnnotation)
		}
		return
	}
	keys := make([]annotatedKey, len(deps))
	for i, d := range deps {
		keys[i] = annotatedKey{APIVersion: d.APIVersion, Kind: d.Child.Kind, Namespace: d.Child.Namespace, Name: d.Child.Name}
	}
	data, _ := json.Marshal(keys) // strings only: cannot fail
	if annotations == nil {
		annotations = map[string]any{}
		meta["annotations"] = annotations
	}
	annotations[AfterAnnotation] = string(data)
}

// annotatedKey is one entry of AfterAnnotation.
type annotatedKey struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// AfterOf reads obj's AfterAnnotation: the children it waited for when the engine last wrote
// it. An absent or unreadable annotation (edited by hand) is nothing.
func AfterOf(obj *unstructured.Unstructured) []Key {
	raw, ok := obj.GetAnnotations()[AfterAnnotation]
	if !ok {
		return nil
	}
	var keys []annotatedKey
	if json.Unmarshal([]byte(raw), &keys) != nil {
		return nil
	}
	out := make([]Key, 0, len(keys))
	for _, k := range keys {
		out = append(out, Key{Group: groupOf(k.APIVersion), Kind: k.Kind, Namespace: k.Namespace, Name: k.Name})
	}
	return out
}

// Carries reports whether obj records an order (AfterAnnotation). It reads the annotations
// in place: it runs over every child of every reconcile.
func Carries(obj *unstructured.Unstructured) bool {
	meta, _ := obj.Object["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	_, ok := annotations[AfterAnnotation]
	return ok
}

// Carried reports whether any of a parent's observed children, by child rule, records an
// order: then deleting them all at once (the garbage collector's way) would break it, and
// the engine must delete them itself, in reverse order.
func Carried(observed map[int][]*unstructured.Unstructured) bool {
	for _, list := range observed {
		if slices.ContainsFunc(list, Carries) {
			return true
		}
	}
	return false
}

// Held is a child that leaves later, and the observed children that still wait for it.
type Held struct {
	Child   *unstructured.Unstructured
	Waiters []Key
}

// HoldDeletions decides which of leaving, the children about to be deleted, wait: a child
// is held while one of staying (the parent's other observed children the answer does not
// keep: the leaving ones and those left untouched) lists it in its AfterAnnotation. The
// children the answer keeps hold nothing: what they wait for is in the answer. When every
// leaving child is held and only by leaving ones (a cycle of stale annotations, which no
// answer can form), none is held: the order cannot be kept, and waiting would keep them
// forever. Held children come in the order of leaving.
func HoldDeletions(leaving, staying []*unstructured.Unstructured) []Held {
	if len(leaving) == 0 {
		return nil
	}
	keys := make(map[Key]bool, len(leaving))
	for _, o := range leaving {
		keys[KeyOf(o)] = true
	}
	waiters := map[Key][]Key{}
	for _, o := range staying {
		self := KeyOf(o)
		for _, k := range AfterOf(o) {
			if k != self && keys[k] {
				waiters[k] = append(waiters[k], self)
			}
		}
	}
	var held []Held
	onlyLeaving := true
	for _, o := range leaving {
		w := waiters[KeyOf(o)]
		if len(w) == 0 {
			continue
		}
		slices.SortFunc(w, func(a, b Key) int { return strings.Compare(a.String(), b.String()) })
		held = append(held, Held{Child: o, Waiters: slices.Compact(w)})
		for _, k := range w {
			onlyLeaving = onlyLeaving && keys[k]
		}
	}
	if len(held) == len(leaving) && onlyLeaving {
		return nil
	}
	return held
}
