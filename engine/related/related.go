// Package related is what a controller's customize hook makes of its parents: the objects
// beyond their children that each parent's sync and finalize hooks see (request.related),
// the caches those objects are read from, and the routing of their events back to the
// parents that read them.
//
// A customize answer is a list of rules (Rule), each naming a resource and which of its
// objects a parent sees. A Tracker keeps, per controller, each parent's last answer while
// the parent's fingerprint stands, one informer per resource that a parent's rules name, and
// an index from objects to the parents whose bound rules select them. It does not call the
// customize hook: its caller does, and hands the answer in.
package related

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/informers"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/resources"
)

// Tracker keeps the related objects of one controller's parents; P names a parent (the
// controller's work-queue item). Its methods are safe for concurrent use, for different
// parents and for one; the event handlers it registers run on the informers' goroutines and
// only look up its index and call enqueue.
//
// A parent's hooks read what Rules and Objects return; the events of those objects reach the
// parent only once Bind recorded the rules as the parent's (bound references). Until its next
// Bind, the objects its previous rules selected keep routing to it, so that a parent whose
// selection changes hears of both the objects it stops reading and those it starts reading.
type Tracker[P comparable] struct {
	informers *informers.Factory
	namespace string // where its informers watch: every namespace when empty
	resolver  Resolver
	version   v1alpha1.HookVersion
	reach     Reach
	enqueue   func(P)
	index     *index[P]

	mu sync.Mutex
	// sources are the informers running: of the resources bound rules name, and of those
	// a reconcile read that has not bound its rules yet.
	sources map[schema.GroupVersionResource]*source
	// bound counts, per resource, the parents whose bound rules name it.
	bound   map[schema.GroupVersionResource]int
	answers map[types.UID]answer // each parent's last customize answer
}

// answer is a parent's customize answer, valid while the parent's fingerprint is and for the
// revision of the hooks that gave it.
type answer struct {
	fingerprint, revision string
	rules                 []Rule
}

// New returns a Tracker that resolves the resources of customize answers with resolver,
// reads them through informers from factory, keys related objects as hooks of version ask
// (protocol.ObjectKey), lets a namespaced parent's rules select as far as reach, and hands
// enqueue each parent an event concerns. With a namespace, the tracker is a confined
// controller's: its informers watch that namespace alone, and rules naming a cluster-scoped
// resource are refused (the caller refuses them first, with the reason the controller sees).
func New[P comparable](factory *informers.Factory, namespace string, resolver Resolver, version v1alpha1.HookVersion, reach Reach, enqueue func(P)) *Tracker[P] {
	return &Tracker[P]{informers: factory, namespace: namespace, resolver: resolver, version: version, reach: reach, enqueue: enqueue, index: newIndex[P](),
		sources: map[schema.GroupVersionResource]*source{}, bound: map[schema.GroupVersionResource]int{},
		answers: map[types.UID]answer{}}
}

// Rules returns the parent's related rules: its last customize answer while the parent's
// fingerprint (protocol.ParentFingerprint) stands and the hooks are of the same revision (a
// staged hook change runs two), otherwise what ask returns (the customize
// hook's response), validated whole and kept. An error of ask is returned as it is; an
// invalid answer as a *protocol.InvalidResponseError. After an error, the informers no bound
// rule names are stopped.
func (t *Tracker[P]) Rules(parent *unstructured.Unstructured, revision string, ask func() (map[string]any, error)) ([]Rule, error) {
	fp := protocol.ParentFingerprint(parent)
	t.mu.Lock()
	cached, ok := t.answers[parent.GetUID()]
	t.mu.Unlock()
	if ok && cached.fingerprint == fp && cached.revision == revision {
		return cached.rules, nil
	}
	resp, err := ask()
	var rules []Rule
	if err == nil {
		rules, err = parseCustomize(resp, parent, t.resolver, t.reach)
	}
	if err != nil {
		t.prune()
		return nil, err
	}
	t.mu.Lock()
	t.answers[parent.GetUID()] = answer{fingerprint: fp, revision: revision, rules: rules}
	t.mu.Unlock()
	return rules, nil
}

// Objects returns the request's related map of parent under rules: one entry per resource
// the rules name, keyed "<Kind>.<apiVersion>" and present even when empty, mapping each
// selected object's key (protocol.ObjectKey) to the object, which is the cache's own:
// read-only. It starts the informers of those resources that do not run yet and waits for
// their caches to sync; when ctx ends first, it stops the informers no bound rule names and
// returns the error. The map is read from those caches even if another parent's failure
// stops their informers meanwhile (Bind starts them again).
func (t *Tracker[P]) Objects(ctx context.Context, parent *unstructured.Unstructured, rules []Rule) (map[string]any, error) {
	caches, err := t.ensure(ctx, resourcesOf(rules))
	if err != nil {
		t.prune()
		return nil, err
	}
	return objectMap(parent, rules, t.version, func(res resources.Resource) cache.Indexer { return caches[res.GVR] }), nil
}

// Bind records rules as what parent p's hooks read, in place of the rules bound before:
// from now on the events of the objects rules select reach p, and those only the previous
// rules selected no longer do. Call it once a reconcile that used rules has a valid decision.
// The informer of a resource rules name runs from here on: one that another parent's failure
// stopped since Objects is started again, and its initial list reaches p. Informers no bound
// rule names any more are stopped.
func (t *Tracker[P]) Bind(p P, rules []Rule) {
	old := t.index.record(p, rules)
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, res := range resourcesOf(old) {
		if t.bound[res.GVR]--; t.bound[res.GVR] == 0 {
			delete(t.bound, res.GVR)
		}
	}
	for _, res := range resourcesOf(rules) {
		t.bound[res.GVR]++
		if t.sources[res.GVR] == nil {
			_, _ = t.startLocked(res) // fails only for an informer being stopped, or a resource refused before
		}
	}
	t.pruneLocked()
}

// Forget drops parent p, whose UID is uid, gone from the cache: its bound rules and its
// customize answer.
func (t *Tracker[P]) Forget(p P, uid types.UID) {
	t.Bind(p, nil)
	t.mu.Lock()
	delete(t.answers, uid)
	t.mu.Unlock()
}

// Stop stops every informer the tracker started. The tracker is not used afterwards.
func (t *Tracker[P]) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for gvr, src := range t.sources {
		t.stopLocked(gvr, src)
	}
}
