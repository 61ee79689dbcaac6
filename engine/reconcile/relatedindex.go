package reconcile

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
)

// relatedIndex routes a related object's event to the parents whose rules select it, by key
// lookups: never a scan of every parent. A parent's rules are recorded after each reconcile
// that used them (bound references): until its next reconcile has recorded new ones, the
// objects it selected before keep routing their events to it, so that nothing derived from
// an old selection is left stale. Safe for concurrent use.
//
// Keys are "<resource>|<namespace>|<term>": namespace is the object's ("" for cluster-scoped
// resources) or "*" for rules over every namespace; term is "n=<name>" for rules by name,
// "l=<key>=<value>" for each equality term of a rule's selector, or "*" for selectors
// without one. An event looks up the keys its object could match, then checks each
// candidate's rules.
type relatedIndex struct {
	mu    sync.RWMutex
	rules map[Request][]RelatedRule
	keys  map[string]map[Request]struct{}
	// bySelector holds the parents with a rule selecting by namespace labels: a namespace's
	// labels changing concerns them all.
	byNamespaceLabels map[Request]struct{}
}

func newRelatedIndex() *relatedIndex {
	return &relatedIndex{rules: map[Request][]RelatedRule{}, keys: map[string]map[Request]struct{}{},
		byNamespaceLabels: map[Request]struct{}{}}
}

// record replaces the parent's rules and returns the ones it had.
func (x *relatedIndex) record(req Request, rules []RelatedRule) []RelatedRule {
	x.mu.Lock()
	defer x.mu.Unlock()
	old := x.rules[req]
	for _, r := range old {
		for _, k := range ruleKeys(r) {
			delete(x.keys[k], req)
			if len(x.keys[k]) == 0 {
				delete(x.keys, k)
			}
		}
	}
	delete(x.byNamespaceLabels, req)
	if len(rules) == 0 {
		delete(x.rules, req)
		return old
	}
	x.rules[req] = rules
	for _, r := range rules {
		for _, k := range ruleKeys(r) {
			if x.keys[k] == nil {
				x.keys[k] = map[Request]struct{}{}
			}
			x.keys[k][req] = struct{}{}
		}
		if r.NamespaceSelector != nil {
			x.byNamespaceLabels[req] = struct{}{}
		}
	}
	return old
}

// route returns the parents whose recorded rules select obj, an object of gvr.
func (x *relatedIndex) route(gvr schema.GroupVersionResource, obj *unstructured.Unstructured,
	nsLabels func(string) (map[string]string, bool)) []Request {
	x.mu.RLock()
	defer x.mu.RUnlock()
	seen := map[Request]bool{}
	var out []Request
	consider := func(key string) {
		for req := range x.keys[key] {
			if seen[req] {
				continue
			}
			seen[req] = true
			for _, r := range x.rules[req] {
				if r.Resource.GVR == gvr && r.matches(obj, nsLabels) {
					out = append(out, req)
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
		p := prefix + ns + "|"
		consider(p + "n=" + obj.GetName())
		for k, v := range obj.GetLabels() {
			consider(p + "l=" + k + "=" + v)
		}
		consider(p + "*")
	}
	return out
}

// namespaceLabelUsers returns the parents with a rule selecting by namespace labels.
func (x *relatedIndex) namespaceLabelUsers() []Request {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]Request, 0, len(x.byNamespaceLabels))
	for req := range x.byNamespaceLabels {
		out = append(out, req)
	}
	return out
}

// ruleKeys are the keys a rule is indexed under.
func ruleKeys(r RelatedRule) []string {
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
