package mapping

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// memos remembers, per parent and map key, what the last hook call for that key saw, so that
// a reconcile calls again only the keys whose world changed. It lives as long as the
// controller's runner: a controller edit starts from an empty one, so every input is mapped
// again. Safe for concurrent use.
type memos struct {
	mu sync.Mutex
	m  map[types.UID]map[string]*memo
}

// memo is one key's last call. It is valid while the input's resourceVersion, the parent's
// fingerprint and the key's outputs (by name and resourceVersion) are what they were after
// the call's writes, and until expires.
type memo struct {
	inputVersion string // "" for a tombstone call
	parent       string
	outputs      map[string]string // namespace/name → resourceVersion
	expires      time.Time         // zero: never
	// due: the hook asked for this key to be called again at expires (resyncAfterSeconds).
	due bool
	// deferred: the webhook answered this key's call with Retry-After; the memo stands until
	// expires whatever changes, so that the key is not called before, and then it is.
	deferred bool
}

func newMemos() *memos { return &memos{m: map[types.UID]map[string]*memo{}} }

func (ms *memos) get(parent types.UID, key string) *memo {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.m[parent][key]
}

func (ms *memos) set(parent types.UID, key string, m *memo) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	byKey := ms.m[parent]
	if byKey == nil {
		byKey = map[string]*memo{}
		ms.m[parent] = byKey
	}
	if m == nil {
		delete(byKey, key)
		return
	}
	byKey[key] = m
}

// keep drops every memo of parent whose key is not in live.
func (ms *memos) keep(parent types.UID, live map[string]bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for key := range ms.m[parent] {
		if !live[key] {
			delete(ms.m[parent], key)
		}
	}
}

func (ms *memos) forget(parent types.UID) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	delete(ms.m, parent)
}

// valid reports whether m still stands for a call that would see inputVersion, parent and
// outputs at now; a deferred memo stands until it expires, whatever they are.
func (m *memo) valid(inputVersion, parent string, outputs []*unstructured.Unstructured, now time.Time) bool {
	if m != nil && m.deferred {
		return now.Before(m.expires)
	}
	if m == nil || m.inputVersion != inputVersion || m.parent != parent || len(outputs) != len(m.outputs) {
		return false
	}
	if !m.expires.IsZero() && !now.Before(m.expires) {
		return false
	}
	for _, o := range outputs {
		if m.outputs[o.GetNamespace()+"/"+o.GetName()] != o.GetResourceVersion() {
			return false
		}
	}
	return true
}

// versions is the namespace/name → resourceVersion map of objects.
func versions(objs []*unstructured.Unstructured) map[string]string {
	out := make(map[string]string, len(objs))
	for _, o := range objs {
		out[o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
	}
	return out
}
