package render

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/reconcile"
)

// History is what the renderings of a run wrote, round after round: the objects as last
// written, the claims changed, and the round each child was created in, by RESOURCE KEY
// (entryKey), in the order they first changed.
type History struct {
	written map[string]*unstructured.Unstructured
	claims  map[string]string // "adopt" or "release"
	order   []string
	// created holds the round (from 1) each created child was created in; rounds counts
	// the renderings recorded.
	created map[string]int
	rounds  int
}

// NewHistory returns an empty History.
func NewHistory() *History {
	return &History{written: map[string]*unstructured.Unstructured{}, claims: map[string]string{}, created: map[string]int{}}
}

// waves reports whether the children of keep (those the output shows created) were created
// in more than one round: in dependency order (a hook's order), and their create documents
// then say their wave.
func (h *History) waves(keep func(k string) bool) bool {
	first := 0
	for k, round := range h.created {
		if !keep(k) {
			continue
		}
		if first != 0 && round != first {
			return true
		}
		first = round
	}
	return false
}

// Record adds what r wrote, as the next round.
func (h *History) Record(r *reconcile.Rendering) {
	h.rounds++
	for _, c := range r.Adopt {
		h.claim(entryKey(c.Resource.GVR, c.Object), "adopt")
	}
	for _, c := range r.Release {
		h.claim(entryKey(c.Resource.GVR, c.Object), "release")
	}
	var deleted []string
	for _, w := range r.Children {
		k := entryKey(w.Rule.GVR, w.Object)
		switch w.Action {
		case apply.Created, apply.Updated:
			h.note(k)
			h.written[k] = w.Object
			if w.Action == apply.Created {
				h.created[k] = h.rounds
			}
		case apply.Deleted:
			deleted = append(deleted, k)
		}
	}
	slices.Sort(deleted) // the engine deletes in no particular order
	for _, k := range deleted {
		h.note(k)
	}
}

func (h *History) claim(k, how string) {
	h.note(k)
	h.claims[k] = how
}

func (h *History) note(k string) {
	if !slices.Contains(h.order, k) {
		h.order = append(h.order, k)
	}
}
