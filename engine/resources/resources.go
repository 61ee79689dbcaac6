// Package resources resolves the (apiVersion, resource) pairs named in controller resources
// to their kind and scope through API discovery. Each group-version's resource list is cached
// and fetched again when a resource is not found in it, so a CRD installed after the engine
// started resolves without a restart.
package resources

import (
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Resource is a resolved API resource.
type Resource struct {
	GVR        schema.GroupVersionResource
	GVK        schema.GroupVersionKind
	Namespaced bool
	// HasStatus: the resource has a status subresource.
	HasStatus bool
}

// APIVersion is the resource's group/version as written in objects.
func (r Resource) APIVersion() string { return r.GVK.GroupVersion().String() }

// Key is the request's children/related map key, "<Kind>.<apiVersion>".
func (r Resource) Key() string { return r.GVK.Kind + "." + r.APIVersion() }

// Describe names obj, an object of the resource, in Events, conditions and log lines:
// "Kind namespace/name", or "Kind name" when it has no namespace.
func (r Resource) Describe(obj metav1.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return r.GVK.Kind + " " + ns + "/" + obj.GetName()
	}
	return r.GVK.Kind + " " + obj.GetName()
}

// NotFoundError says a resource is not served by the API server (yet).
type NotFoundError struct{ APIVersion, Resource string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("resource %q in %q is not served by the API server", e.Resource, e.APIVersion)
}

// Resolver resolves resources through discovery. It is safe for concurrent use.
type Resolver struct {
	client discovery.DiscoveryInterface
	// minRefresh bounds how often one group-version is fetched again on a miss.
	minRefresh time.Duration

	mu     sync.Mutex
	groups map[string]*groupVersion
}

type groupVersion struct {
	fetched   time.Time
	resources map[string]metav1.APIResource // subresources ("x/status") included
}

// NewResolver returns a Resolver using client.
func NewResolver(client discovery.DiscoveryInterface) *Resolver {
	return &Resolver{client: client, minRefresh: time.Second, groups: map[string]*groupVersion{}}
}

// Resolve returns the resource named by apiVersion and its plural name. A resource missing
// from the cached list triggers one fresh discovery of its group-version (at most once a
// second); *NotFoundError means it is still not served.
func (r *Resolver) Resolve(apiVersion, resource string) (Resource, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return Resource{}, fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	if strings.Contains(resource, "/") {
		return Resource{}, fmt.Errorf("resource %q: subresources cannot be parents or children", resource)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.groups[apiVersion]
	if g != nil {
		if res, ok := g.resources[resource]; ok {
			return toResource(gv, res, g), nil
		}
		if time.Since(g.fetched) < r.minRefresh {
			return Resource{}, &NotFoundError{APIVersion: apiVersion, Resource: resource}
		}
	}
	list, err := r.client.ServerResourcesForGroupVersion(apiVersion)
	if err != nil && !apierrors.IsNotFound(err) {
		return Resource{}, fmt.Errorf("discovering %s: %w", apiVersion, err)
	}
	g = &groupVersion{fetched: time.Now(), resources: map[string]metav1.APIResource{}}
	if list != nil {
		for _, res := range list.APIResources {
			g.resources[res.Name] = res
		}
	}
	r.groups[apiVersion] = g
	if res, ok := g.resources[resource]; ok {
		return toResource(gv, res, g), nil
	}
	return Resource{}, &NotFoundError{APIVersion: apiVersion, Resource: resource}
}

func toResource(gv schema.GroupVersion, res metav1.APIResource, g *groupVersion) Resource {
	_, hasStatus := g.resources[res.Name+"/status"]
	return Resource{
		GVR:        gv.WithResource(res.Name),
		GVK:        gv.WithKind(res.Kind),
		Namespaced: res.Namespaced,
		HasStatus:  hasStatus,
	}
}
