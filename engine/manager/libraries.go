package manager

import (
	"context"
	"encoding/json"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/informers"
	"metascript.dev/metascript/scripting"
)

// Hook libraries. The manager watches HookLibrary and NamespacedHookLibrary, queues their
// keys beside the controllers' (key kind libraryKey), compiles each revision once (its status
// says whether every module compiled) and keeps an index from a library to the controllers
// whose hooks name it, with the revision each was built with. An event of a library enqueues
// those of its controllers built with another revision than the library has now, and no
// other: an event that leaves the revision as it was (a status write, a label) rebuilds
// nothing. sync rebuilds a controller when a library it named changed revision
// (librariesChanged), and the new runner syncs every parent again. Edits that come faster
// than the controllers are built are coalesced by the queue: a controller still queued is
// built once, with the revision its build finds. A rebuild that fails for a controller that
// runs keeps its last good runner and reports the error in HooksCompiled.

// libraryID names one library: its scope (a namespace, "" for a cluster HookLibrary) and name.
type libraryID struct {
	namespace, name string
}

// libraryWatch is the manager's view of the library resources.
type libraryWatch struct {
	cluster, namespaced *informers.Informer
	// stores are the informers' stores: cluster HookLibraries and NamespacedHookLibraries.
	clusterStore, namespacedStore cache.Indexer

	mu    sync.Mutex
	users map[libraryID]map[key]bool // the index: library → controllers naming it
}

// scopedLibraries are the libraries one controller's hooks may load: cluster HookLibraries
// for a cluster-scoped controller, the NamespacedHookLibraries of its namespace for a
// namespaced one. It records each name asked for, with what it found, so that the manager
// knows what the controller depends on, including libraries not there yet. A name is looked
// up once: every hook of one build loads the same revision of a library.
//
// With account set (a controller with an account), a library is loaded only if the account
// may get it (references.go): a refused one is not looked at and counts as missing, and its
// check is kept among checks, for the build to report the refusal and the manager to ask
// again.
type scopedLibraries struct {
	indexer   cache.Indexer
	namespace string
	account   *libraryAccount

	mu     sync.Mutex
	asked  map[string]*foundLibrary // nil: missing
	checks []referenceCheck
}

// libraryAccount is whom one build's library loads are checked for.
type libraryAccount struct {
	user string
	// allowed reports whether the account may get the library of check c; a review that
	// could not be made counts as a refusal (the build reports it from checks).
	allowed func(c referenceCheck) bool
}

// hookLibraries is a scopedLibraries as one hook's compile asks it, so that a check names
// the hook (field) that loads the library.
type hookLibraries struct {
	*scopedLibraries
	field string
}

func (h hookLibraries) Library(name string) (*scripting.Library, bool) {
	return h.lookup(name, h.field)
}

// forHook is s as the hook at field (spec.hooks.sync) asks it.
func (s *scopedLibraries) forHook(field string) scripting.Libraries {
	return hookLibraries{scopedLibraries: s, field: field}
}

// libraryChecks are the checks the loads so far made, in order.
func (s *scopedLibraries) libraryChecks() []referenceCheck {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]referenceCheck(nil), s.checks...)
}

// foundLibrary is a library as one build found it: compiled form and spec.
type foundLibrary struct {
	lib  *scripting.Library
	spec *v1alpha1.HookLibrarySpec
}

func (s *scopedLibraries) Library(name string) (*scripting.Library, bool) {
	return s.lookup(name, "spec.hooks")
}

// lookup is Library for the hook at field.
func (s *scopedLibraries) lookup(name, field string) (*scripting.Library, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, asked := s.asked[name]; asked {
		return f.libOrNil()
	}
	if s.asked == nil {
		s.asked = map[string]*foundLibrary{}
	}
	if a := s.account; a != nil {
		c := libraryCheck(field, a.user, s.namespace, name)
		s.checks = append(s.checks, c)
		if !a.allowed(c) {
			s.asked[name] = nil
			return nil, false
		}
	}
	k := name
	if s.namespace != "" {
		k = s.namespace + "/" + name
	}
	var f *foundLibrary
	if obj, ok, _ := s.indexer.GetByKey(k); ok {
		spec, err := librarySpecOf(obj.(*unstructured.Unstructured))
		if err == nil {
			if lib, err := hooks.LibraryOf(name, *spec); err == nil {
				f = &foundLibrary{lib: lib, spec: spec}
			}
		}
	}
	s.asked[name] = f
	return f.libOrNil()
}

func (f *foundLibrary) libOrNil() (*scripting.Library, bool) {
	if f == nil {
		return nil, false
	}
	return f.lib, true
}

func (s *scopedLibraries) Scope() string { return hooks.LibraryScope(s.namespace) }

// names is what the compiles so far asked for: library name → revision ("" missing).
func (s *scopedLibraries) names() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.asked))
	for n, f := range s.asked {
		out[n] = ""
		if f != nil {
			out[n] = f.lib.Revision
		}
	}
	return out
}

// specs are the specs of the libraries the compiles so far loaded, by name: what a hook
// revision covers besides the hooks (rollout.Hooks.Libraries); nil when they loaded none.
func (s *scopedLibraries) specs() map[string]*v1alpha1.HookLibrarySpec {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out map[string]*v1alpha1.HookLibrarySpec
	for n, f := range s.asked {
		if f != nil {
			if out == nil {
				out = map[string]*v1alpha1.HookLibrarySpec{}
			}
			out[n] = f.spec
		}
	}
	return out
}

// librarySpecOf reads the spec of a library resource.
func librarySpecOf(u *unstructured.Unstructured) (*v1alpha1.HookLibrarySpec, error) {
	var spec v1alpha1.HookLibrarySpec
	raw, _ := u.Object["spec"].(map[string]any)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
		return nil, err
	}
	return &spec, nil
}

// libraryOf reads a library resource; nil with an error for one that does not decode.
func libraryOf(u *unstructured.Unstructured) (*scripting.Library, error) {
	spec, err := librarySpecOf(u)
	if err != nil {
		return nil, err
	}
	return hooks.LibraryOf(u.GetName(), *spec)
}

// librariesFor are the libraries a controller of namespace ns (""; cluster-scoped) may load.
func (m *Manager) librariesFor(ns string) *scopedLibraries {
	return &scopedLibraries{indexer: m.libraryStore(ns), namespace: ns}
}

// indexLibraries records that controller k (of namespace ns) names libs, the revisions its
// build found, replacing what it named before; nil libs removes it from the index. A library
// that changed since the build looked it up, before the index named k, had its event handled
// without k: k is enqueued again, and sync rebuilds it (librariesChanged).
func (m *Manager) indexLibraries(k key, ns string, libs map[string]string) {
	m.recordUsers(k, ns, libs)
	if len(libs) > 0 && m.revisionsDiffer(ns, libs) {
		m.queue.Add(k)
	}
}

// recordUsers is the index half of indexLibraries.
func (m *Manager) recordUsers(k key, ns string, libs map[string]string) {
	w := &m.libs
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, users := range w.users {
		if users[k] {
			if _, still := libs[id.name]; !still || id.namespace != ns {
				delete(users, k)
				if len(users) == 0 {
					delete(w.users, id)
				}
			}
		}
	}
	for name := range libs {
		id := libraryID{namespace: ns, name: name}
		if w.users[id] == nil {
			w.users[id] = map[key]bool{}
		}
		w.users[id][k] = true
	}
}

// usersOf are the controllers whose hooks name library id.
func (m *Manager) usersOf(id libraryID) []key {
	w := &m.libs
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]key, 0, len(w.users[id]))
	for k := range w.users[id] {
		out = append(out, k)
	}
	return out
}

// enqueueStale enqueues the controllers whose hooks name library id and that were built
// with another revision of it than rev, its revision now ("" when there is none): those sync
// rebuilds. One whose entry is not recorded yet (its build is under way) is enqueued too.
func (m *Manager) enqueueStale(id libraryID, rev string) {
	users := m.usersOf(id)
	m.mu.Lock()
	stale := users[:0]
	for _, k := range users {
		run := m.runners[k]
		if built, named := run.libraryRevision(id); !named || built != rev {
			stale = append(stale, k)
		}
	}
	m.mu.Unlock()
	for _, k := range stale {
		m.queue.Add(k)
	}
}

// libraryRevision is the revision of library id run was built with ("" for none), and
// whether run's hooks named it; false for a nil run. m.mu is held.
func (run *running) libraryRevision(id libraryID) (rev string, named bool) {
	if run == nil || run.libNamespace != id.namespace {
		return "", false
	}
	rev, named = run.libs[id.name]
	return rev, named
}

// libraryRef names a library in the queue, as ref names a controller: hooklibrary/NAME,
// namespacedhooklibrary/NAMESPACE/NAME; k is its cache key.
func libraryRef(k string) string {
	if ns, name, _ := cache.SplitMetaNamespaceKey(k); ns != "" {
		return "namespacedhooklibrary/" + ns + "/" + name
	}
	return "hooklibrary/" + k
}

// librariesChanged reports whether a library that run's hooks named has another revision now
// (or appeared, or went).
func (m *Manager) librariesChanged(run *running) bool {
	if len(run.libs) == 0 {
		return false
	}
	return m.revisionsDiffer(run.libNamespace, run.libs)
}

// revisionsDiffer reports whether a library of namespace ns named in libs (name → revision,
// "" missing) has another revision in the cache now.
func (m *Manager) revisionsDiffer(ns string, libs map[string]string) bool {
	now := m.librariesFor(ns)
	for name, rev := range libs {
		cur := ""
		if l, ok := now.Library(name); ok {
			cur = l.Revision
		}
		if cur != rev {
			return true
		}
	}
	return false
}

// watchLibraries starts the library informers; what they deliver is handled by syncLibrary.
// It returns what to wait for before building controllers, and a function that stops it.
func (m *Manager) watchLibraries(ctx context.Context) ([]cache.InformerSynced, func(), error) {
	m.libs.users = map[libraryID]map[key]bool{}
	m.libs.cluster = m.opts.Informers.Acquire(v1alpha1.HookLibraryResource)
	m.libs.namespaced = m.opts.Informers.Acquire(v1alpha1.NamespacedHookLibraryResource)
	m.libs.clusterStore, m.libs.namespacedStore = m.libs.cluster.Indexer(), m.libs.namespaced.Indexer()
	var regs []func()
	stop := func() {
		for _, r := range regs {
			r()
		}
		m.opts.Informers.Release(m.libs.cluster)
		m.opts.Informers.Release(m.libs.namespaced)
	}
	for _, inf := range []*informers.Informer{m.libs.cluster, m.libs.namespaced} {
		handle := func(obj any) {
			if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				m.queue.Add(key{kind: libraryKey, name: k})
			}
		}
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    handle,
			UpdateFunc: func(_, cur any) { handle(cur) },
			DeleteFunc: handle,
		})
		if err != nil {
			stop()
			return nil, nil, err
		}
		regs = append(regs, func() { _ = inf.RemoveEventHandler(reg) })
	}
	return []cache.InformerSynced{m.libs.cluster.HasSynced, m.libs.namespaced.HasSynced}, stop, nil
}

// libraryCompiler is what compiles a library for its status; *scripting.Runtime is one.
type libraryCompiler interface {
	CompileLibrary(lib *scripting.Library) error
}

// syncLibrary handles a change of the library named by cache key k (NAME for a HookLibrary,
// NAMESPACE/NAME for a NamespacedHookLibrary): it enqueues the controllers that name it (sync
// rebuilds those whose library changed) and, for a library that exists, compiles it and
// writes its status. An error is a status not written: the key is retried.
func (m *Manager) syncLibrary(ctx context.Context, k string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(k)
	gvr := v1alpha1.HookLibraryResource
	if ns != "" {
		gvr = v1alpha1.NamespacedHookLibraryResource
	}
	cur, exists, _ := m.libraryStore(ns).GetByKey(k)
	if !exists {
		m.enqueueStale(libraryID{namespace: ns, name: name}, "")
		return nil
	}
	u := cur.(*unstructured.Unstructured)
	lib, err := libraryOf(u)
	rev := ""
	if err == nil {
		rev = lib.Revision
	}
	m.enqueueStale(libraryID{namespace: ns, name: name}, rev)
	cond := metav1.Condition{Type: v1alpha1.ConditionCompiled, Status: metav1.ConditionTrue, Reason: "Compiled",
		Message: "every module compiled", ObservedGeneration: u.GetGeneration()}
	if err == nil {
		if lc, ok := m.opts.Compiler.(libraryCompiler); ok {
			err = lc.CompileLibrary(lib)
		}
	}
	if err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "CompileError", err.Error()
		m.opts.Recorder.Event(u, corev1.EventTypeWarning, "CompileError", err.Error())
	}
	return m.writeLibraryStatus(ctx, gvr, u, rev, cond)
}

// libraryStore holds the libraries of namespace ns ("": the cluster HookLibraries).
func (m *Manager) libraryStore(ns string) cache.Indexer {
	if ns == "" {
		return m.libs.clusterStore
	}
	return m.libs.namespacedStore
}

func cacheKeyOf(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

// writeLibraryStatus patches the status of library u when it differs.
func (m *Manager) writeLibraryStatus(ctx context.Context, gvr schema.GroupVersionResource, u *unstructured.Unstructured, rev string, cond metav1.Condition) error {
	if sh := m.opts.Shard; sh != nil && !sh.Leads("status|library/"+cacheKeyOf(u)) {
		return nil
	}
	var cur v1alpha1.HookLibraryStatus
	if raw, ok := u.Object["status"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &cur)
	}
	next := *cur.DeepCopy()
	next.ObservedGeneration, next.Revision = u.GetGeneration(), rev
	meta.SetStatusCondition(&next.Conditions, cond)
	a, _ := json.Marshal(cur)
	b, _ := json.Marshal(next)
	if string(a) == string(b) {
		return nil
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": u.GetUID()}, "status": next})
	if err != nil {
		return err
	}
	_, err = m.opts.Dynamic.Resource(gvr).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.MergePatchType, body,
		metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// libraryFailure is a rebuild, caused by a library change, of a controller that runs: it
// keeps its runner (its last good hooks) and reports err in HooksCompiled.
func (m *Manager) libraryFailure(ctx context.Context, k key, u *unstructured.Unstructured, cur *running, libs map[string]string, err error) error {
	m.mu.Lock()
	cur.libraryErr = err
	cur.libs = libs
	m.mu.Unlock()
	m.indexLibraries(k, cur.libNamespace, libs)
	m.opts.Recorder.Event(u, corev1.EventTypeWarning, "LibraryError",
		"the hooks do not build with the libraries they load; the controller keeps running its last good hooks: "+err.Error())
	m.opts.Log.Error("controller keeps its last good hooks", "controller", m.ref(k), "error", err.Error())
	return m.writeStatus(ctx, k, u, m.statusOK(k, cur))
}
