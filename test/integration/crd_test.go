package integration

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"metascript.dev/metascript/test/enginetest"
)

// TestCRDRejectsMalformedControllers: what the schema can say, the API server refuses.
func TestCRDRejectsMalformedControllers(t *testing.T) {
	const head = `
apiVersion: metascript.dev/v1alpha1
kind: CompositeController
metadata: {name: malformed}
spec:
  parentResource: {apiVersion: test.metascript.dev/v1, resource: bundles}
`
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"two hook forms", `  hooks:
    sync:
      starlark: {source: "def sync(r): return {}"}
      webhook: {url: "http://x"}`, "exactly one of starlark, javascript or webhook"},
		{"no hook form", `  hooks:
    sync: {}`, "exactly one of starlark, javascript or webhook"},
		{"webhook with url and service", `  hooks:
    sync:
      webhook: {url: "http://x", service: {name: hooks, namespace: ops}}`, "exactly one of url or service"},
		{"unknown update method", `  childResources:
    - apiVersion: v1
      resource: configmaps
      updateStrategy: {method: Sometimes}
  hooks:
    sync:
      starlark: {source: "def sync(r): return {}"}`, "Unsupported value"},
		{"bad function name", `  hooks:
    sync:
      starlark: {source: "def sync(r): return {}", function: "not a name"}`, "function"},
		{"negative steps", `  hooks:
    sync:
      budget: {maxSteps: -1}
      starlark: {source: "def sync(r): return {}"}`, "maxSteps"},
		{"webhook with authorization and basicAuth", `  hooks:
    sync:
      webhook:
        url: "https://x"
        authorization: {secretRef: {name: s, namespace: ops, key: token}}
        basicAuth: {secretRef: {name: s, namespace: ops}}`, "authorization and basicAuth are mutually exclusive"},
		{"endpoint config with authorization and basicAuth", `  endpointConfigs:
    - host: x
      authorization: {secretRef: {name: s, namespace: ops, key: token}}
      basicAuth: {secretRef: {name: s, namespace: ops}}
  hooks:
    sync:
      webhook: {url: "https://x"}`, "authorization and basicAuth are mutually exclusive"},
		{"authorization of type Basic", `  hooks:
    sync:
      webhook:
        url: "https://x"
        authorization: {type: basic, secretRef: {name: s, namespace: ops, key: token}}`, "must not be Basic"},
		{"caBundle with two sources", `  hooks:
    sync:
      webhook:
        url: "https://x"
        caBundle: {inline: "PEM", configMapRef: {name: c, namespace: ops}}`, "exactly one of inline, secretRef or configMapRef"},
		{"unknown unmarshall mode", `  hooks:
    sync:
      webhook: {url: "https://x", responseUnMarshallMode: lax}`, "Unsupported value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := enginetest.Object(t, head+tc.spec)
			_, err := env.Client(t, obj).Create(context.Background(), obj, metav1.CreateOptions{})
			if err == nil {
				env.Delete(t, obj)
				t.Fatal("the API server accepted a malformed controller")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}
