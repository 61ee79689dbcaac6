package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/identity"
	"metascript.dev/metascript/test/enginetest"
)

// reviewWait bounds how long a changed Role takes to reach a controller's configuration
// reads: the Reviewer's answers last identity.ReviewTTL, and the manager asks again every
// status interval. Generous, for a shared machine; no test asserts the time.
const reviewWait = 3 * identity.ReviewTTL

// grantRole gives the ServiceAccount ns/account the rules through a Role and RoleBinding
// named name in ns; revoke deletes the binding.
func grantRole(t *testing.T, ns, account, name string, rules ...rbacv1.PolicyRule) (revoke func()) {
	t.Helper()
	return grantRoleTo(t, ns, ns, account, name, rules...)
}

// grantRoleTo is grantRole for the ServiceAccount accountNS/account, in namespace ns.
func grantRoleTo(t *testing.T, ns, accountNS, account, name string, rules ...rbacv1.PolicyRule) (revoke func()) {
	t.Helper()
	ctx := context.Background()
	if _, err := env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: accountNS, Name: account}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := env.Kube.RbacV1().RoleBindings(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}

// parentRules are what a namespaced controller's account needs for Bundles that it only
// gives a status, and a finalizer when it has a finalize hook.
var parentRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"test.metascript.dev"}, Resources: []string{"bundles"}, Verbs: []string{"get", "list", "watch", "patch"}},
	{APIGroups: []string{"test.metascript.dev"}, Resources: []string{"bundles/status"}, Verbs: []string{"get", "patch", "update"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
}

// getOne is a rule allowing get on the one object name of resource in group.
func getOne(group, resource, name string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, ResourceNames: []string{name}, Verbs: []string{"get"}}
}

// statusController creates a NamespacedCompositeController NAME in ns on Bundles labelled
// suite=NAME, without children, whose sync hook is given as YAML (indented for hooks.sync).
func statusController(t *testing.T, ns, name, sync string) *unstructured.Unstructured {
	t.Helper()
	doc := fmt.Sprintf(`apiVersion: metascript.dev/v1alpha1
kind: NamespacedCompositeController
metadata: {name: %s}
spec:
  parentResource:
    apiVersion: test.metascript.dev/v1
    resource: bundles
    labelSelector: {matchLabels: {suite: %s}}
  hooks:
    sync:
%s`, name, name, sync)
	out := env.Create(t, ns, enginetest.Object(t, doc))
	t.Cleanup(func() { env.Delete(t, out) })
	return out
}

// waitReady waits until the namespaced controller's Ready condition is status with a message
// holding every one of texts.
func waitReady(t *testing.T, ctl *unstructured.Unstructured, status, reason string, texts ...string) {
	t.Helper()
	enginetest.Eventually(t, reviewWait, func() (bool, string) {
		cur := env.Get(t, ctl.GetAPIVersion(), ctl.GetKind(), ctl.GetNamespace(), ctl.GetName())
		msg := conditionMessage(cur, "Ready")
		ok := enginetest.Condition(cur, "Ready") == status && conditionReason(cur, "Ready") == reason &&
			!slices.ContainsFunc(texts, func(s string) bool { return !strings.Contains(msg, s) })
		return ok, fmt.Sprintf("Ready %s %s: %s; want %s %s with %q", enginetest.Condition(cur, "Ready"),
			conditionReason(cur, "Ready"), msg, status, reason, texts)
	})
}

// statusField is the parent's status.FIELD, "" when unset.
func statusField(t *testing.T, ns, name, field string) string {
	v, _, _ := unstructured.NestedString(getBundle(t, ns, name).Object, "status", field)
	return v
}

// TestConfigurationReadAsTheTenant: a namespaced controller whose configuration names an
// object its account may not get — a webhook's authorization Secret, a hook source
// ConfigMap, a hook library — does not run: Ready=False, ReferenceRefused, naming the field,
// the account, the verb and the object, and nothing of the object is used (the webhook never
// receives the credential). A grant of get on that very object lets it run; revoking it
// stops it again. The engine's own account may read all of them.
func TestConfigurationReadAsTheTenant(t *testing.T) {
	const secretValue = "tenant-may-not-read-this"
	var mu sync.Mutex
	var heard []string // Authorization headers the webhook received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		heard = append(heard, r.Header.Get("Authorization"))
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"status": map[string]any{"from": "webhook"}})
	}))
	t.Cleanup(srv.Close) // after the parallel subtests
	received := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(heard)
	}

	cases := []struct {
		name string
		// setup creates the object in ns and returns the rule that lets the account get it.
		setup func(t *testing.T, ns string) rbacv1.PolicyRule
		sync  string // NS is the test's namespace
		// refusal is in the Ready message: the field and the object, after the account.
		field, object, from string
	}{
		{
			name: "webhook-secret",
			setup: func(t *testing.T, ns string) rbacv1.PolicyRule {
				if _, err := env.Kube.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
					StringData: map[string]string{"token": secretValue}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				return getOne("", "secrets", "creds")
			},
			sync:  fmt.Sprintf("      webhook:\n        url: %s\n        authorization: {secretRef: {namespace: NS, name: creds, key: token}}\n", srv.URL),
			field: "spec.hooks.sync.webhook.authorization.secretRef", object: `secrets "creds"`, from: "webhook",
		},
		{
			name: "source-configmap",
			setup: func(t *testing.T, ns string) rbacv1.PolicyRule {
				if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "src"},
					Data: map[string]string{"sync.star": "def sync(request):\n    return {\"status\": {\"from\": \"configmap\"}}\n"}},
					metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				return getOne("", "configmaps", "src")
			},
			sync:  "      starlark: {configMapRef: {namespace: NS, name: src, key: sync.star}}\n",
			field: "spec.hooks.sync.starlark.configMapRef", object: `configmaps "src"`, from: "configmap",
		},
		{
			name: "library",
			setup: func(t *testing.T, ns string) rbacv1.PolicyRule {
				env.Create(t, ns, enginetest.Object(t, `apiVersion: metascript.dev/v1alpha1
kind: NamespacedHookLibrary
metadata: {name: words}
spec:
  modules:
    - name: text
      starlark: |
        FROM = "library"
`))
				return getOne("metascript.dev", "namespacedhooklibraries", "words")
			},
			sync: "      starlark:\n        source: |\n          load(\"lib:words/text.star\", \"FROM\")\n" +
				"          def sync(request):\n              return {\"status\": {\"from\": FROM}}\n",
			field: "spec.hooks.sync", object: `namespacedhooklibraries.metascript.dev "words"`, from: "library",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			user := identity.User(ns, "default")
			grantRole(t, ns, "default", "parents", parentRules...)
			rule := c.setup(t, ns)
			ctl := statusController(t, ns, c.name, strings.ReplaceAll(c.sync, "NS", ns))
			refusal := fmt.Sprintf("%s: %s may not get %s in namespace %s", c.field, user, c.object, ns)
			waitReady(t, ctl, "False", "ReferenceRefused", refusal)
			bundle(t, ns, "p", c.name, "p")

			if c.name == "webhook-secret" && len(received()) > 0 {
				t.Fatalf("the webhook was called while the Secret was refused: %q", received())
			}

			// Granted get on that one object, the controller runs.
			revoke := grantRole(t, ns, "default", "reference", rule)
			waitReady(t, ctl, "True", "Running")
			enginetest.Eventually(t, wait, func() (bool, string) {
				got := statusField(t, ns, "p", "from")
				return got == c.from, fmt.Sprintf("parent status.from %q, want %q", got, c.from)
			})
			if c.name == "webhook-secret" && !slices.Contains(received(), "Bearer "+secretValue) {
				t.Errorf("the webhook received Authorization %q, want the granted credential", received())
			}

			// Revoked, it stops: Ready=False again, and a new parent reaches no hook.
			revoke()
			waitReady(t, ctl, "False", "ReferenceRefused", refusal)
			calls := len(received())
			w := witness(t, "reads-"+ns)
			actedOn(t, w, 1, func() { witnessed(t, bundle(t, ns, "q", c.name, "q"), "reads-"+ns) })
			if got := statusField(t, ns, "q", "from"); got != "" {
				t.Errorf("a parent created after the revocation got status.from %q, want none", got)
			}
			if len(received()) != calls {
				t.Errorf("the webhook was called %d times after the revocation", len(received())-calls)
			}
		})
	}
}

// TestRefusalEventsAfterEventsRevoked: a tenant whose account lost the right to create
// Events still sees why its parents do not converge: ReadRefused and WriteFailed are
// recorded with the engine's own account.
func TestRefusalEventsAfterEventsRevoked(t *testing.T) {
	reads, writes := env.Namespace(t), env.Namespace(t)
	parents := []rbacv1.PolicyRule{parentRules[0], parentRules[1]}
	grantRole(t, reads, "default", "parents", parents...)
	grantRole(t, writes, "default", "parents", parents...)
	// writes may see its Copies but not create them; reads may not even list them.
	grantRole(t, writes, "default", "copies", rbacv1.PolicyRule{APIGroups: []string{"test.metascript.dev"},
		Resources: []string{"copies"}, Verbs: []string{"get", "list", "watch"}})
	sync := `      starlark:
        source: |
          def sync(request):
              parent = request["parent"]
              labels = dict(parent["spec"]["selector"]["matchLabels"])
              return {"children": [{"apiVersion": "test.metascript.dev/v1", "kind": "Copy",
                                    "metadata": {"name": parent["metadata"]["name"], "labels": labels}}]}
`
	for _, ns := range []string{reads, writes} {
		revokeEvents := grantRole(t, ns, "default", "events", parentRules[2])
		ctl := env.Create(t, ns, enginetest.Object(t, fmt.Sprintf(`apiVersion: metascript.dev/v1alpha1
kind: NamespacedCompositeController
metadata: {name: events}
spec:
  parentResource:
    apiVersion: test.metascript.dev/v1
    resource: bundles
    labelSelector: {matchLabels: {suite: events}}
  childResources:
    - {apiVersion: test.metascript.dev/v1, resource: copies}
  hooks:
    sync:
%s`, sync)))
		t.Cleanup(func() { env.Delete(t, ctl) })
		waitControllerReadyIn(t, "NamespacedCompositeController", ns, "events")
		revokeEvents()
		bundle(t, ns, "p", "events", "p")
	}
	env.WaitEvent(t, wait, reads, "p", "ReadRefused", identity.User(reads, "default"), "list copies.test.metascript.dev")
	env.WaitEvent(t, wait, writes, "p", "WriteFailed", identity.User(writes, "default"), `cannot create resource "copies"`)
}

// TestTeardownReleasesTheFinalizer: a tenant's RoleBinding, parent and controller are
// deleted together. The account may no longer remove the controller's finalizer from the
// parent; the controller being gone, the engine removes it with its own rights and says so
// in an Event, and the parent and the controller go.
func TestTeardownReleasesTheFinalizer(t *testing.T) {
	ns := env.Namespace(t)
	revoke := grantRole(t, ns, "default", "parents", parentRules...)
	ctl := statusController(t, ns, "teardown", `      starlark:
        source: |
          def sync(request):
              return {"status": {"from": "sync"}}
    finalize:
      starlark:
        source: |
          def finalize(request):
              return {"finalized": True}
`)
	p := bundle(t, ns, "p", "teardown", "p")
	var finalizer string
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := getBundle(t, ns, "p")
		for _, f := range cur.GetFinalizers() {
			if strings.HasPrefix(f, "metascript.dev/") {
				finalizer = f
			}
		}
		return finalizer != "" && statusField(t, ns, "p", "from") == "sync", fmt.Sprintf("parent finalizers %v", cur.GetFinalizers())
	})

	revoke()
	env.Delete(t, p)
	env.Delete(t, ctl)
	enginetest.Eventually(t, reviewWait, func() (bool, string) {
		parent := getBundle(t, ns, "p")
		controller := env.Get(t, ctl.GetAPIVersion(), ctl.GetKind(), ns, ctl.GetName())
		if parent != nil {
			return false, fmt.Sprintf("the parent is still there, finalizers %v", parent.GetFinalizers())
		}
		return controller == nil, "the controller is still there"
	})
	env.WaitEvent(t, wait, ns, "p", "FinalizerReleasedByEngine", finalizer, identity.User(ns, "default"))
}
