package main

import (
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"metascript.dev/metascript/cmd/metascript/internal/manifest"
	"metascript.dev/metascript/engine/resources"
)

// offlineResolver resolves resources without an API server (a related.Resolver), from what
// is at hand: the CustomResourceDefinitions among the given files, the built-in resources
// client-go knows, and the objects of the request itself, whose kinds name their
// resources.
type offlineResolver struct {
	known map[schema.GroupVersionResource]resources.Resource
}

// newOfflineResolver knows the resources of crds and of the objects in req: its top-level
// objects (parent, object, input) and those in its maps of groups (children, related, ...).
func newOfflineResolver(crds []manifest.CRD, req map[string]any) *offlineResolver {
	r := &offlineResolver{known: map[schema.GroupVersionResource]resources.Resource{}}
	for _, c := range crds {
		for _, v := range c.Versions {
			gv := schema.GroupVersion{Group: c.Group, Version: v.Name}
			r.add(resources.Resource{GVR: gv.WithResource(c.Names.Plural), GVK: gv.WithKind(c.Names.Kind),
				Namespaced: c.Scope != "Cluster"})
		}
	}
	for _, res := range builtinResources() {
		r.add(res)
	}
	for _, v := range req {
		obj, _ := v.(map[string]any)
		r.addObject(obj)
		for _, group := range obj {
			objects, _ := group.(map[string]any)
			for _, o := range objects {
				m, _ := o.(map[string]any)
				r.addObject(m)
			}
		}
	}
	return r
}

// add keeps what is known first: a CRD over a guess from an object.
func (r *offlineResolver) add(res resources.Resource) {
	if _, ok := r.known[res.GVR]; !ok {
		r.known[res.GVR] = res
	}
}

// addObject learns the resource of obj when it is an object with apiVersion and kind, its
// plural guessed from the kind as kubectl does; it is namespaced when obj has a namespace.
func (r *offlineResolver) addObject(obj map[string]any) {
	u := unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	if obj == nil || gvk.Kind == "" || gvk.Version == "" {
		return
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	r.add(resources.Resource{GVR: plural, GVK: gvk, Namespaced: u.GetNamespace() != ""})
}

// Resolve returns the resource named by apiVersion and its plural name.
func (r *offlineResolver) Resolve(apiVersion, resource string) (resources.Resource, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return resources.Resource{}, fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	if res, ok := r.known[gv.WithResource(resource)]; ok {
		return res, nil
	}
	return resources.Resource{}, fmt.Errorf("the kind of %s in %s is not known offline: pass its CustomResourceDefinition "+
		"with -f, or write one of its objects in the request", resource, apiVersion)
}

// builtinResources are the resources of client-go's typed clientset, each with its kind from
// client-go's scheme, its plural guessed from the kind, and its scope from the clientset: a
// namespaced resource's client takes the namespace (Pods(namespace)), a cluster-scoped one's
// does not (Nodes()).
var builtinResources = sync.OnceValue(func() []resources.Resource {
	var out []resources.Resource
	clientset := reflect.TypeFor[kubernetes.Interface]()
	for i := range clientset.NumMethod() {
		group := clientset.Method(i).Type
		if group.NumIn() != 0 || group.NumOut() != 1 || group.Out(0).Kind() != reflect.Interface {
			continue
		}
		for j := range group.Out(0).NumMethod() {
			client := group.Out(0).Method(j).Type
			if client.NumOut() != 1 || client.Out(0).Kind() != reflect.Interface {
				continue
			}
			get, ok := client.Out(0).MethodByName("Get")
			if !ok || get.Type.NumOut() != 2 || get.Type.Out(0).Kind() != reflect.Pointer {
				continue
			}
			obj, ok := reflect.New(get.Type.Out(0).Elem()).Interface().(runtime.Object)
			if !ok {
				continue
			}
			gvks, _, err := scheme.Scheme.ObjectKinds(obj)
			if err != nil {
				continue
			}
			for _, gvk := range gvks {
				plural, _ := meta.UnsafeGuessKindToResource(gvk)
				out = append(out, resources.Resource{GVR: plural, GVK: gvk, Namespaced: client.NumIn() == 1})
			}
		}
	}
	return out
})
