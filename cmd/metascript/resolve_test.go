package main

import (
	"strings"
	"testing"

	"metascript.dev/metascript/cmd/metascript/internal/manifest"
)

// TestOfflineResolver: built-in resources resolve with their kind and scope, custom ones from
// their CustomResourceDefinition or from an object of the request, others not at all.
func TestOfflineResolver(t *testing.T) {
	f, err := manifest.ReadFile("testdata/controllers/bundle-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	req := map[string]any{"children": map[string]any{"Widget.example.com/v1": map[string]any{
		"w": map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w", "namespace": "ns"}},
	}}}
	r := newOfflineResolver(f.CRDs, req)
	cases := []struct {
		apiVersion, resource string
		// want is the Key and the scope, or the start of the error.
		want string
	}{
		{"v1", "configmaps", "ConfigMap.v1 namespaced"},
		{"v1", "namespaces", "Namespace.v1 cluster-scoped"},
		{"v1", "endpoints", "Endpoints.v1 namespaced"},
		{"apps/v1", "deployments", "Deployment.apps/v1 namespaced"},
		{"networking.k8s.io/v1", "ingresses", "Ingress.networking.k8s.io/v1 namespaced"},
		{"rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole.rbac.authorization.k8s.io/v1 cluster-scoped"},
		{"test.metascript.dev/v1", "bundles", "Bundle.test.metascript.dev/v1 namespaced"},
		{"test.metascript.dev/v1", "globals", "Global.test.metascript.dev/v1 cluster-scoped"},
		{"example.com/v1", "widgets", "Widget.example.com/v1 namespaced"},
		{"example.com/v1", "gadgets", "the kind of gadgets in example.com/v1 is not known offline"},
	}
	for _, c := range cases {
		t.Run(c.apiVersion+" "+c.resource, func(t *testing.T) {
			res, err := r.Resolve(c.apiVersion, c.resource)
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = res.Key() + map[bool]string{true: " namespaced", false: " cluster-scoped"}[res.Namespaced]
			}
			if !strings.HasPrefix(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
