package manager

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"metascript.dev/metascript/engine/fairshare"
)

func libraryObject(ns, name, src string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metascript.dev/v1alpha1", "kind": "HookLibrary",
		"spec": map[string]any{"modules": []any{map[string]any{"name": "m", "starlark": src}}},
	}}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// TestScopedLibrariesConfine: a namespaced controller finds only the libraries of its own
// namespace, a cluster-scoped one only cluster libraries; every name asked is recorded.
func TestScopedLibrariesConfine(t *testing.T) {
	namespaced := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	cluster := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, o := range []*unstructured.Unstructured{libraryObject("a", "util", "X = 1"), libraryObject("b", "other", "X = 2")} {
		if err := namespaced.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := cluster.Add(libraryObject("", "shared", "X = 3")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		indexer cache.Indexer
		ns      string
		name    string
		found   bool
	}{
		{namespaced, "a", "util", true},
		{namespaced, "a", "other", false},  // namespace b's
		{namespaced, "a", "shared", false}, // a cluster library
		{namespaced, "b", "util", false},
		{cluster, "", "shared", true},
		{cluster, "", "util", false},
	}
	for _, c := range cases {
		s := &scopedLibraries{indexer: c.indexer, namespace: c.ns}
		lib, ok := s.Library(c.name)
		if ok != c.found {
			t.Errorf("namespace %q, library %s: found %v, want %v", c.ns, c.name, ok, c.found)
			continue
		}
		want := ""
		if ok {
			want = lib.Revision
		}
		if got, asked := s.names()[c.name]; !asked || got != want {
			t.Errorf("namespace %q, library %s: recorded %q (%v), want %q", c.ns, c.name, got, asked, want)
		}
	}
}

func TestLibraryOfRefusesAmbiguousModules(t *testing.T) {
	u := libraryObject("", "x", "X = 1")
	u.Object["spec"].(map[string]any)["modules"] = []any{map[string]any{"name": "m", "starlark": "X = 1", "javascript": "x"}}
	if _, err := libraryOf(u); err == nil {
		t.Fatal("a module with two languages was accepted")
	}
}

// TestScopedLibrariesLookUpOnce: one build sees one revision of a library, even when it is
// edited between two hooks' compiles, and its specs are what that revision held.
func TestScopedLibrariesLookUpOnce(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(libraryObject("", "util", "X = 1")); err != nil {
		t.Fatal(err)
	}
	s := &scopedLibraries{indexer: indexer}
	first, _ := s.Library("util")
	if err := indexer.Update(libraryObject("", "util", "X = 2")); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.Library("util"); again.Revision != first.Revision {
		t.Fatalf("a second lookup found revision %s, the first %s", again.Revision, first.Revision)
	}
	if _, ok := s.Library("absent"); ok {
		t.Fatal("a missing library was found")
	}
	specs := s.specs()
	if len(specs) != 1 || specs["util"] == nil || specs["util"].Modules[0].Starlark != "X = 1" {
		t.Fatalf("specs %+v, want util as first found", specs)
	}
	if fresh, _ := (&scopedLibraries{indexer: indexer}).Library("util"); fresh.Revision == first.Revision {
		t.Fatal("a new build did not see the edit")
	}
}

// TestEnqueueStaleQueuesOnlyChangedUsers: an event of a library that now has revision "r2"
// queues the controllers that named it and were built with another revision (or none, or
// are being built), and no other.
func TestEnqueueStaleQueuesOnlyChangedUsers(t *testing.T) {
	id := libraryID{namespace: "team-a", name: "util"}
	cases := []struct {
		name   string
		run    *running // nil: no entry yet
		queued bool
	}{
		{"built with the revision it has now", &running{libNamespace: "team-a", libs: map[string]string{"util": "r2"}}, false},
		{"built with another revision", &running{libNamespace: "team-a", libs: map[string]string{"util": "r1"}}, true},
		{"built while it was missing", &running{libNamespace: "team-a", libs: map[string]string{"util": ""}}, true},
		{"its build is under way: no entry yet", nil, true},
		{"its entry does not record the library yet", &running{libNamespace: "team-a", libs: map[string]string{"other": "x"}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &Manager{runners: map[key]*running{}}
			m.libs.users = map[libraryID]map[key]bool{}
			m.queue = fairshare.NewQueue(fairshare.QueueConfig[key]{
				FlowOf:      func(k key) fairshare.Flow { return fairshare.Flow{Tenant: "t", Controller: k.name} },
				RateLimiter: workqueue.DefaultTypedControllerRateLimiter[key]()})
			defer m.queue.ShutDown()
			user, other := key{kind: 0, name: "team-a/user"}, key{kind: 0, name: "team-a/other"}
			m.recordUsers(user, "team-a", map[string]string{"util": "r1"})
			m.recordUsers(other, "team-a", map[string]string{"else": "r1"}) // names another library
			if c.run != nil {
				m.runners[user] = c.run
			}
			m.enqueueStale(id, "r2")
			want := 0
			if c.queued {
				want = 1
			}
			if n := m.queue.Len(); n != want {
				t.Fatalf("%d keys queued, want %d", n, want)
			}
			if want == 1 {
				if k, _ := m.queue.Get(); k != user {
					t.Fatalf("queued %v, want %v", k, user)
				}
			}
		})
	}
}

// TestIndexLibrariesQueuesABuildThatMissedAnEdit: a build that found a library missing (or at
// an older revision) and is indexed after the library's event was handled is queued again;
// one that found the library as it is now is not.
func TestIndexLibrariesQueuesABuildThatMissedAnEdit(t *testing.T) {
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := store.Add(libraryObject("team-a", "util", "X = 1")); err != nil {
		t.Fatal(err)
	}
	found, _ := (&scopedLibraries{indexer: store, namespace: "team-a"}).Library("util")
	cases := []struct {
		name   string
		built  map[string]string
		queued bool
	}{
		{"found it as it is", map[string]string{"util": found.Revision}, false},
		{"found it missing", map[string]string{"util": ""}, true},
		{"found an older revision", map[string]string{"util": "r0"}, true},
		{"found a library since deleted as missing", map[string]string{"gone": ""}, false},
		{"names no library", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &Manager{runners: map[key]*running{}}
			m.libs.users = map[libraryID]map[key]bool{}
			m.libs.namespacedStore = store
			m.queue = fairshare.NewQueue(fairshare.QueueConfig[key]{
				FlowOf:      func(k key) fairshare.Flow { return fairshare.Flow{Tenant: "t", Controller: k.name} },
				RateLimiter: workqueue.DefaultTypedControllerRateLimiter[key]()})
			defer m.queue.ShutDown()
			m.indexLibraries(key{name: "team-a/user"}, "team-a", c.built)
			want := 0
			if c.queued {
				want = 1
			}
			if n := m.queue.Len(); n != want {
				t.Fatalf("%d keys queued, want %d", n, want)
			}
		})
	}
}
