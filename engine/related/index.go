package related

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
)

// index routes a related object's event to the parents whose bound rules select it, by key
// lookups: never a scan of every parent. P names a parent. A parent's rules are recorded
// (Tracker.Bind) once a reconcile that used them has a valid decision; until its next such
// reconcile records new ones, the objects it selected before keep routing their events to it,
// so that nothing derived from an old selection is left stale. Safe for concurrent use.
//
// Keys are "<resource>|<namespace>|<term>": namespace is the object's ("" for cluster-scoped
// resources) or "*" for rules over every namespace; term is "n=<name>" for rules by name,
// "l=<key>=<value>" for one equality term of a rule's selector, or "*" for selectors
// without one. An event looks up the keys its object could match, then checks each
// candidate's rules.
type index[P comparable] struct {
	mu    sync.RWMutex
	rules map[P][]Rule
	keys  map[string]map[P]struct{}
	// byNamespaceLabels holds the parents with a rule selecting by namespace labels: a
	// namespace's labels changing concerns them all.
	byNamespaceLabels map[P]struct{}
}

func newIndex[P comparable]() *index[P] {
	return &index[P]{rules: map[P][]Rule{}, keys: map[string]map[P]struct{}{}, byNamespaceLabels: map[P]struct{}{}}
}

// record replaces the parent's rules and returns the ones it had.
func (x *index[P]) record(p P, rules []Rule) []Rule {
	x.mu.Lock()
	defer x.mu.Unlock()
	old := x.rules[p]
	for _, r := range old {
		for _, k := range ruleKeys(r) {
			delete(x.keys[k], p)
			if len(x.keys[k]) == 0 {
				delete(x.keys, k)
			}
		}
	}
	delete(x.byNamespaceLabels, p)
	if len(rules) == 0 {
		delete(x.rules, p)
		return old
	}
	x.rules[p] = rules
	for _, r := range rules {
		for _, k := range ruleKeys(r) {
			if x.keys[k] == nil {
				x.keys[k] = map[P]struct{}{}
			}
			x.keys[k][p] = struct{}{}
		}
		if r.NamespaceSelector != nil {
			x.byNamespaceLabels[p] = struct{}{}
		}
	}
	return old
}

// route returns the parents whose recorded rules select obj, an object of gvr.
func (x *index[P]) route(gvr schema.GroupVersionResource, obj *unstructured.Unstructured,
	nsLabels func(string) (map[string]string, bool)) []P {
	x.mu.RLock()
	defer x.mu.RUnlock()
	seen := map[P]bool{}
	var out []P
	consider := func(key string) {
		for p := range x.keys[key] {
			if seen[p] {
				continue
			}
			seen[p] = true
			for _, r := range x.rules[p] {
				if r.Resource.GVR == gvr && r.matches(obj, nsLabels) {
					out = append(out, p)
					break
				}
			}
		}
	}
	prefix := gvr.String() + "|"
	scopes := []string{obj.GetNamespace()}
	if obj.GetNamespace() != "" {
		scopes = append(scopes, "*")
	}
	for _, ns := range scopes {
		k := prefix + ns + "|"
		consider(k + "n=" + obj.GetName())
		for key, v := range obj.GetLabels() {
			consider(k + "l=" + key + "=" + v)
		}
		consider(k + "*")
	}
	return out
}

// namespaceLabelUsers returns the parents with a rule selecting by namespace labels.
func (x *index[P]) namespaceLabelUsers() []P {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]P, 0, len(x.byNamespaceLabels))
	for p := range x.byNamespaceLabels {
		out = append(out, p)
	}
	return out
}

// ruleKeys are the keys a rule is indexed under.
func ruleKeys(r Rule) []string {
	ns := r.Namespace
	if r.Resource.Namespaced && ns == "" {
		ns = "*"
	}
	p := r.Resource.GVR.String() + "|" + ns + "|"
	if r.Names != nil {
		keys := make([]string, len(r.Names))
		for i, n := range r.Names {
			keys[i] = p + "n=" + n
		}
		return keys
	}
	var keys []string
	if reqs, ok := r.Selector.Requirements(); ok {
		for _, req := range reqs {
			if (req.Operator() == selection.Equals || req.Operator() == selection.DoubleEquals) && req.Values().Len() == 1 {
				keys = append(keys, p+"l="+req.Key()+"="+req.Values().List()[0])
				break // one term is enough: every match carries it
			}
		}
	}
	if keys == nil {
		keys = []string{p + "*"}
	}
	return keys
}
