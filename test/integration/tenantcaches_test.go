package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/engine/informers"
	"metascript.dev/metascript/test/enginetest"
)

var (
	secretsResource    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	configMapsResource = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	bundlesResource    = schema.GroupVersionResource{Group: "test.metascript.dev", Version: "v1", Resource: "bundles"}
	copiesResource     = schema.GroupVersionResource{Group: "test.metascript.dev", Version: "v1", Resource: "copies"}
)

// cachedIn returns the keys of the objects of gvr in namespace ns that any of the engine's
// informers caches, whatever namespace it watches.
func cachedIn(gvr schema.GroupVersionResource, ns string) []string {
	var out []string
	for _, keys := range env.Engine.Informers().Keys(gvr) {
		for _, k := range keys {
			if strings.HasPrefix(k, ns+"/") {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// scopesIn returns the engine's informers that watch namespace ns alone.
func scopesIn(ns string) []informers.Scope {
	var out []informers.Scope
	for s := range env.Engine.Informers().Sizes() {
		if s.Namespace == ns {
			out = append(out, s)
		}
	}
	return out
}

// cacheMetric is metascript_cache_objects of resource ("secrets") and namespace, -1 when
// absent.
func cacheMetric(t *testing.T, resource, namespace string) float64 {
	t.Helper()
	families, err := env.Engine.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "metascript_cache_objects" {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabel(m, "resource", resource) && hasLabel(m, "namespace", namespace) {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// secretDecorator creates a NamespacedDecoratorController NAME in ns on the Secrets labelled
// suite=SUITE, labelling each decorated-by-NAME=yes.
func secretDecorator(t *testing.T, ns, name, suite string) *unstructured.Unstructured {
	t.Helper()
	out := env.Create(t, ns, enginetest.Object(t, fmt.Sprintf(`apiVersion: metascript.dev/v1alpha1
kind: NamespacedDecoratorController
metadata: {name: %s}
spec:
  resources:
    - apiVersion: v1
      resource: secrets
      labelSelector: {matchLabels: {suite: %s}}
  hooks:
    sync:
      starlark:
        source: |
          def sync(request):
              return {"labels": {"decorated-by-%s": "yes"}}
`, name, suite, name)))
	t.Cleanup(func() { env.Delete(t, out) })
	waitControllerReadyIn(t, "NamespacedDecoratorController", ns, name)
	return out
}

func secret(t *testing.T, ns, name string, labels map[string]string) {
	t.Helper()
	if _, err := env.Kube.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, StringData: map[string]string{"token": ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitDecorated waits until Secret ns/name carries decorated-by-<by>=yes for each of by.
func waitDecorated(t *testing.T, ns, name string, by ...string) {
	t.Helper()
	enginetest.Eventually(t, wait, func() (bool, string) {
		s, err := env.Kube.CoreV1().Secrets(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, b := range by {
			if s.Labels["decorated-by-"+b] != "yes" {
				return false, fmt.Sprintf("secret %s/%s labels %v, want decorated-by-%s", ns, name, s.Labels, b)
			}
		}
		return true, ""
	})
}

// TestNamespacedDecoratorCachesItsNamespaceOnly: a NamespacedDecoratorController on Secrets
// in team-a decorates team-a's Secrets while the engine caches no Secret of team-b, although
// team-b holds Secrets its selector matches; two such controllers share the one informer of
// team-a's Secrets, which outlives the first and stops with the last.
func TestNamespacedDecoratorCachesItsNamespaceOnly(t *testing.T) {
	waitManagerSettled(t) // no earlier test's controller caches Secrets any more
	teamA, teamB := env.Namespace(t), env.Namespace(t)
	grantRole(t, teamA, "default", "decorate-secrets",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "patch", "update"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}})
	matched := map[string]string{"suite": "cached-secrets"}
	for _, ns := range []string{teamA, teamB} {
		secret(t, ns, "creds", matched)
		secret(t, ns, "plain", nil)
	}
	first := secretDecorator(t, teamA, "first", "cached-secrets")
	second := secretDecorator(t, teamA, "second", "cached-secrets")
	waitDecorated(t, teamA, "creds", "first", "second")

	inA := informers.Scope{GVR: secretsResource, Namespace: teamA}
	if got := cachedIn(secretsResource, teamB); len(got) != 0 {
		t.Errorf("the engine caches team-b's Secrets %v", got)
	}
	if got := env.Engine.Informers().Keys(secretsResource)[inA]; !containsAll(got, teamA+"/creds", teamA+"/plain") {
		t.Errorf("the informer of team-a's Secrets caches %v, want its creds and plain", got)
	}
	if _, cluster := env.Engine.Informers().Sizes()[informers.Scope{GVR: secretsResource}]; cluster {
		t.Error("an informer of every namespace's Secrets runs for namespaced controllers")
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		n, want := cacheMetric(t, "secrets", teamA), len(env.Engine.Informers().Keys(secretsResource)[inA])
		return n == float64(want), fmt.Sprintf("metascript_cache_objects{resource=secrets,namespace=%s} = %v, want %d", teamA, n, want)
	})

	// The first goes: the second keeps the informer, and decorates what comes.
	deleteController(t, first)
	waitManagerSettled(t)
	if !slices.Contains(scopesIn(teamA), inA) {
		t.Fatalf("the informer of team-a's Secrets stopped while a controller of team-a reads them: %v", scopesIn(teamA))
	}
	secret(t, teamA, "later", matched)
	waitDecorated(t, teamA, "later", "second")

	// The last goes: nothing of team-a is watched any more.
	deleteController(t, second)
	waitManagerSettled(t)
	enginetest.Eventually(t, wait, func() (bool, string) {
		s := scopesIn(teamA)
		return len(s) == 0, fmt.Sprintf("informers of %s still run: %v", teamA, s)
	})
	if n := cacheMetric(t, "secrets", teamA); n != -1 {
		t.Errorf("metascript_cache_objects reports %v Secrets of %s after its informer stopped", n, teamA)
	}
}

// TestNamespacedCompositeCachesItsNamespaceOnly: the parent, child and related informers of a
// NamespacedCompositeController watch its namespace alone: a child of another parent in
// another namespace, which a cluster-wide child informer would keep, is not cached; when the
// controller goes, every informer of its namespace stops.
func TestNamespacedCompositeCachesItsNamespaceOnly(t *testing.T) {
	waitManagerSettled(t)
	teamA, teamB := env.Namespace(t), env.Namespace(t)
	tenantAccount(t, teamA, "tenant", teamA)
	for _, ns := range []string{teamA, teamB} {
		env.Create(t, ns, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "source", "labels": map[string]any{"related": "yes"}}, "data": map[string]any{"value": ns}}})
	}
	// team-b: a parent of the same suite (never the controller's) with a child it controls.
	other := bundle(t, teamB, "b", "cached-composite", "b")
	yes := true
	env.Create(t, teamB, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "b-x", "labels": map[string]any{"app": "b"}, "ownerReferences": []any{map[string]any{
			"apiVersion": bundleAPI, "kind": "Bundle", "name": "b", "uid": string(other.GetUID()), "controller": yes}}}}})

	ncc := namespacedController(t, teamA, "namespaced.yaml", "NAME", "cached", "SUITE", "cached-composite", "ACCOUNT", "tenant")
	waitControllerReadyIn(t, "NamespacedCompositeController", teamA, ncc.GetName())
	bundle(t, teamA, "a", "cached-composite", "a", "x=1")
	enginetest.Eventually(t, wait, func() (bool, string) {
		seen, _, _ := unstructured.NestedMap(getBundle(t, teamA, "a").Object, "status", "relatedByNamespace")
		return value(configMap(t, teamA, "a-x")) == "1" && fmt.Sprint(seen) == fmt.Sprintf("map[%s:1]", teamA),
			fmt.Sprintf("child %s, related seen %v", value(configMap(t, teamA, "a-x")), seen)
	})

	for _, gvr := range []schema.GroupVersionResource{configMapsResource, bundlesResource} {
		if got := cachedIn(gvr, teamB); len(got) != 0 {
			t.Errorf("the engine caches team-b's %s %v", gvr.Resource, got)
		}
	}
	if got := env.Engine.Informers().Keys(configMapsResource)[informers.Scope{GVR: configMapsResource, Namespace: teamA}]; !containsAll(got, teamA+"/a-x", teamA+"/source") {
		t.Errorf("the informer of team-a's ConfigMaps caches %v, want its child a-x and related source", got)
	}

	deleteController(t, ncc)
	waitManagerSettled(t)
	enginetest.Eventually(t, wait, func() (bool, string) {
		s := scopesIn(teamA)
		return len(s) == 0, fmt.Sprintf("informers of %s still run: %v", teamA, s)
	})
}

func containsAll(s []string, want ...string) bool {
	return !slices.ContainsFunc(want, func(w string) bool { return !slices.Contains(s, w) })
}
