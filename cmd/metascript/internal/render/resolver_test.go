package render

import (
	"strings"
	"testing"
)

func TestResolver(t *testing.T) {
	crd := func(scope string, versions ...any) map[string]any {
		return map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"spec": map[string]any{"group": "x.dev", "scope": scope, "names": map[string]any{"plural": "things", "kind": "Thing"},
				"versions": versions}}
	}
	tests := []struct {
		name    string
		crd     map[string]any
		wantErr string
	}{
		{name: "namespaced with status", crd: crd("Namespaced", map[string]any{"name": "v1", "subresources": map[string]any{"status": map[string]any{}}})},
		{name: "bad scope", crd: crd("Everywhere", map[string]any{"name": "v1"}), wantErr: "spec.scope"},
		{name: "no versions", crd: crd("Cluster"), wantErr: "spec.versions"},
		{name: "a version without name", crd: crd("Cluster", map[string]any{}), wantErr: "spec.versions[0].name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewResolver()
			err := r.AddCRD(tt.crd)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Resolve("x.dev/v1", "things")
			if err != nil || res.GVK.Kind != "Thing" || !res.Namespaced || !res.HasStatus {
				t.Fatalf("Resolve: %+v, %v", res, err)
			}
			if byKind, ok := r.ForKind("x.dev/v1", "Thing"); !ok || byKind != res {
				t.Errorf("ForKind: %+v, %v; want %+v", byKind, ok, res)
			}
		})
	}
	r := NewResolver()
	if res, err := r.Resolve("rbac.authorization.k8s.io/v1", "clusterroles"); err != nil || res.Namespaced || res.GVK.Kind != "ClusterRole" {
		t.Errorf("built-in clusterroles: %+v, %v", res, err)
	}
	if _, err := r.Resolve("x.dev/v1", "things"); err == nil || !strings.Contains(err.Error(), "CustomResourceDefinition") {
		t.Errorf("unknown resource: %v, want an error asking for its CustomResourceDefinition", err)
	}
}
