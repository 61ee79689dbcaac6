// Package render is what `metascript render` needs besides the engine: resources resolved
// without a cluster, the observed objects an offline reconcile reads, the state fed back
// between rounds, and how a rendering is printed. The decision itself is the engine's
// (engine/reconcile's Runner.Render).
package render

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/engine/resources"
)

// Resolver resolves resources without API discovery: the built-in resources of Kubernetes
// listed in builtin.go, the engine's own, and those of the CustomResourceDefinitions added.
// It is what the engine's discovery would say of them, scope and status subresource
// included.
type Resolver struct {
	byName map[string]resources.Resource // apiVersion + " " + plural
	byKind map[schema.GroupVersionKind]resources.Resource
}

// NewResolver returns a Resolver of the built-in resources.
func NewResolver() *Resolver {
	r := &Resolver{byName: map[string]resources.Resource{}, byKind: map[schema.GroupVersionKind]resources.Resource{}}
	for _, b := range builtin {
		gv, _ := schema.ParseGroupVersion(b.apiVersion)
		r.add(resources.Resource{GVR: gv.WithResource(b.resource), GVK: gv.WithKind(b.kind), Namespaced: b.namespaced, HasStatus: b.status})
	}
	return r
}

func (r *Resolver) add(res resources.Resource) {
	r.byName[res.APIVersion()+" "+res.GVR.Resource] = res
	r.byKind[res.GVK] = res
}

// Resolve returns the resource named by apiVersion and its plural name (related.Resolver).
func (r *Resolver) Resolve(apiVersion, resource string) (resources.Resource, error) {
	if res, ok := r.byName[apiVersion+" "+resource]; ok {
		return res, nil
	}
	return resources.Resource{}, fmt.Errorf("resource %q in %q is not known offline: give its CustomResourceDefinition with -f or --observed",
		resource, apiVersion)
}

// ForKind returns the resource of objects of apiVersion and kind.
func (r *Resolver) ForKind(apiVersion, kind string) (resources.Resource, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return resources.Resource{}, false
	}
	res, ok := r.byKind[gv.WithKind(kind)]
	return res, ok
}

// IsCRD reports whether obj is a CustomResourceDefinition.
func IsCRD(obj map[string]any) bool {
	return obj["apiVersion"] == "apiextensions.k8s.io/v1" && obj["kind"] == "CustomResourceDefinition"
}

// AddCRD adds the resource a CustomResourceDefinition (apiextensions.k8s.io/v1) defines, in
// each of its versions. Its error names the field at fault.
func (r *Resolver) AddCRD(obj map[string]any) error {
	spec, _ := obj["spec"].(map[string]any)
	names, _ := spec["names"].(map[string]any)
	group, _ := spec["group"].(string)
	plural, _ := names["plural"].(string)
	kind, _ := names["kind"].(string)
	scope, _ := spec["scope"].(string)
	versions, _ := spec["versions"].([]any)
	switch {
	case group == "" || plural == "" || kind == "":
		return fmt.Errorf("spec.group, spec.names.plural and spec.names.kind are required")
	case scope != "Namespaced" && scope != "Cluster":
		return fmt.Errorf("spec.scope: %q is not Namespaced or Cluster", scope)
	case len(versions) == 0:
		return fmt.Errorf("spec.versions: none")
	}
	for i, v := range versions {
		vm, _ := v.(map[string]any)
		name, _ := vm["name"].(string)
		if name == "" {
			return fmt.Errorf("spec.versions[%d].name is required", i)
		}
		sub, _ := vm["subresources"].(map[string]any)
		_, status := sub["status"]
		gv := schema.GroupVersion{Group: group, Version: name}
		r.add(resources.Resource{GVR: gv.WithResource(plural), GVK: gv.WithKind(kind), Namespaced: scope == "Namespaced", HasStatus: status})
	}
	return nil
}
