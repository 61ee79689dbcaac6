package render

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/cmd/metascript/internal/manifest"
	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/resources"
)

// State is the cluster as a render sees it: the observed objects by resource and key
// (namespace/name, or name), as an informer would hold them. The objects are read-only once
// added: a change replaces an object.
type State struct {
	resolver *Resolver
	objects  map[schema.GroupVersionResource]map[string]*unstructured.Unstructured
}

// NewState returns an empty State whose objects' resources resolver knows.
func NewState(resolver *Resolver) *State {
	return &State{resolver: resolver, objects: map[schema.GroupVersionResource]map[string]*unstructured.Unstructured{}}
}

// Add adds an object read from a file, completed as the API server would have stored it
// (Complete); namespace is where an object of a namespaced resource without one is put. Its
// error is located at the object's file and line.
func (s *State) Add(o manifest.Object, namespace string) (*unstructured.Unstructured, resources.Resource, error) {
	u := &unstructured.Unstructured{Object: o.Object}
	res, ok := s.resolver.ForKind(u.GetAPIVersion(), u.GetKind())
	if !ok {
		return nil, res, fmt.Errorf("%s: %s %s: the kind is not known offline: give its CustomResourceDefinition with -f or --observed",
			o.Where(), u.GetKind(), u.GetAPIVersion())
	}
	if !res.Namespaced && u.GetNamespace() != "" {
		return nil, res, fmt.Errorf("%s: %s %s: %s is cluster-scoped but the object has metadata.namespace %q",
			o.Where(), u.GetKind(), u.GetName(), res.GVR.Resource, u.GetNamespace())
	}
	Complete(u, res, namespace)
	if _, dup := s.Get(res, key(u)); dup {
		return nil, res, fmt.Errorf("%s: %s is given twice", o.Where(), res.Describe(u))
	}
	s.Put(res, u)
	return u, res, nil
}

// Complete fills in what the API server sets on every stored object and a file usually
// leaves out: a namespace for an object of a namespaced resource (namespace), a UID derived
// from the object's identity (so that renders repeat), resourceVersion and generation 1.
// managedFields are dropped, as the engine's informers drop them.
func Complete(u *unstructured.Unstructured, res resources.Resource, namespace string) {
	if res.Namespaced && u.GetNamespace() == "" {
		u.SetNamespace(namespace)
	}
	if u.GetUID() == "" {
		u.SetUID(identityUID(res, u))
	}
	if u.GetResourceVersion() == "" {
		u.SetResourceVersion("1")
	}
	if u.GetGeneration() == 0 {
		u.SetGeneration(1)
	}
	u.SetManagedFields(nil)
}

// identityUID is a UID in UUID form derived from an object's resource, namespace and name.
func identityUID(res resources.Resource, u *unstructured.Unstructured) types.UID {
	sum := sha256.Sum256([]byte(res.GVK.String() + "\x00" + u.GetNamespace() + "\x00" + u.GetName()))
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16]))
}

func key(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}

// Get returns the object of res under key.
func (s *State) Get(res resources.Resource, key string) (*unstructured.Unstructured, bool) {
	u, ok := s.objects[res.GVR][key]
	return u, ok
}

// Put stores u as an object of res, replacing the one under its key.
func (s *State) Put(res resources.Resource, u *unstructured.Unstructured) {
	m := s.objects[res.GVR]
	if m == nil {
		m = map[string]*unstructured.Unstructured{}
		s.objects[res.GVR] = m
	}
	m[key(u)] = u
}

// Delete removes the object of res under key.
func (s *State) Delete(res resources.Resource, key string) { delete(s.objects[res.GVR], key) }

// Objects lists the objects of the resource gvr by key (reconcile.Objects).
func (s *State) Objects(gvr schema.GroupVersionResource) []*unstructured.Unstructured {
	m := s.objects[gvr]
	out := make([]*unstructured.Unstructured, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

// Clone returns a State holding the same objects, whose changes s does not see.
func (s *State) Clone() *State {
	c := NewState(s.resolver)
	for gvr, m := range s.objects {
		c.objects[gvr] = maps.Clone(m)
	}
	return c
}

// all is every object of s by RESOURCE KEY: what a comparison of two states walks.
func (s *State) all() map[string]entry {
	out := map[string]entry{}
	for gvr, m := range s.objects {
		for k, u := range m {
			out[gvr.String()+" "+k] = entry{gvr: gvr, obj: u}
		}
	}
	return out
}

type entry struct {
	gvr schema.GroupVersionResource
	obj *unstructured.Unstructured
}

// Apply stores what rendering r of parent (an object of parentRes) decided, as the API
// server would store it had every write succeeded: adopted children with the parent's
// ControllerRef, released ones without, created children (Stored), updated ones (Stored),
// deleted ones gone, the parent as rendered. It returns the parent as stored, or nil when the
// parent is gone: being deleted, with no finalizer left.
func (s *State) Apply(parentRes resources.Resource, r *reconcile.Rendering) *unstructured.Unstructured {
	owner := apply.OwnerRef(r.Parent)
	for _, c := range r.Adopt {
		u := c.Object.DeepCopy()
		u.SetOwnerReferences(append(u.GetOwnerReferences(), owner))
		s.Put(c.Resource, bump(u))
	}
	for _, c := range r.Release {
		u := c.Object.DeepCopy()
		refs := slices.DeleteFunc(u.GetOwnerReferences(), func(ref metav1.OwnerReference) bool { return ref.UID == owner.UID })
		u.SetOwnerReferences(refs)
		s.Put(c.Resource, bump(u))
	}
	for _, w := range r.Children {
		switch w.Action {
		case apply.Created, apply.Updated:
			var have *unstructured.Unstructured
			if w.Action == apply.Updated {
				have, _ = s.Get(w.Rule.Resource, key(w.Object)) // adopted this round, if so
			}
			s.Put(w.Rule.Resource, Stored(have, w.Object, w.Rule.Resource))
		case apply.Deleted:
			s.Delete(w.Rule.Resource, key(w.Observed))
		}
	}
	parent := r.Parent
	if r.ParentChanged {
		parent = bump(parent.DeepCopy())
	}
	if parent.GetDeletionTimestamp() != nil && len(parent.GetFinalizers()) == 0 {
		s.Delete(parentRes, key(parent))
		return nil
	}
	s.Put(parentRes, parent)
	return parent
}

// Stored is an object of res as the API server stores it after the engine wrote written
// over have (nil when it created it): written's fields over have's (objects merged field by
// field, other values replaced, as a server-side apply of one manager leaves fields other
// managers set), with have's UID and a new resourceVersion, or for a new object a UID and
// resourceVersion 1. Fields the engine applied before and written leaves out stay: only the
// API server's field ownership knows them.
func Stored(have, written *unstructured.Unstructured, res resources.Resource) *unstructured.Unstructured {
	if have == nil {
		u := written.DeepCopy()
		Complete(u, res, "default")
		return u
	}
	u := &unstructured.Unstructured{Object: merged(have.Object, written.Object)}
	u.SetUID(have.GetUID())
	u.SetResourceVersion(have.GetResourceVersion())
	return bump(u)
}

// merged is have with set's fields set: objects merged field by field, other values replaced.
// It makes new maps where it merges and shares every other value.
func merged(have, set map[string]any) map[string]any {
	out := make(map[string]any, len(have)+len(set))
	for k, v := range have {
		out[k] = v
	}
	for k, v := range set {
		hv, _ := out[k].(map[string]any)
		if sv, ok := v.(map[string]any); ok && hv != nil {
			out[k] = merged(hv, sv)
			continue
		}
		out[k] = v
	}
	return out
}

// bump gives u the next resourceVersion, as every write does.
func bump(u *unstructured.Unstructured) *unstructured.Unstructured {
	n, err := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
	if err != nil {
		n = 0
	}
	u.SetResourceVersion(strconv.FormatInt(n+1, 10))
	return u
}
