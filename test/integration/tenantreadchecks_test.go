package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/identity"
	"metascript.dev/metascript/test/enginetest"
)

// readSlack is what a read refused within identity.ReviewTTL may take besides: the reconcile
// that asks again, the API server's RBAC catching up, a shared machine.
const readSlack = 15 * time.Second

// grantClusterRole gives the ServiceAccount ns/account the rules across the cluster, through
// a ClusterRole and ClusterRoleBinding named name-ns, both deleted when the test ends.
func grantClusterRole(t *testing.T, ns, account, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	name += "-" + ns
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	if _, err := env.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Kube.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}) })
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: account}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name}}
	if _, err := env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Kube.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}) })
}

// relatedCounter creates testdata/tenant-related.yaml as a controller of kind named name
// (in ns, for a namespaced kind) whose customize hook asks for what rule selects, acting as
// account (a spec.serviceAccount line, or nothing), and waits until it runs.
func relatedCounter(t *testing.T, kind, ns, name, account, rule string) {
	t.Helper()
	replace := []string{"KIND", kind, "NAME", name, "ACCOUNT", account, "RULE", rule}
	if ns == "" {
		controller(t, "tenant-related.yaml", replace...)
	} else {
		namespacedController(t, ns, "tenant-related.yaml", replace...)
	}
	waitControllerReadyIn(t, kind, ns, name)
}

// relatedCount is the parent's status.related, -1 when unset.
func relatedCount(t *testing.T, ns, name string) int64 {
	n, found, _ := unstructured.NestedInt64(read(t, bundles, ns, name).Object, "status", "related")
	if !found {
		return -1
	}
	return n
}

// readCheck is one read the engine checks for a controller's account before it calls the
// controller's hooks.
type readCheck struct {
	name  string
	lacks rbacv1.PolicyRule // one verb of one resource
	// cluster: the controller is cluster-scoped, acting as ns's account "reader", whose
	// rights are the cluster's; otherwise namespaced in ns, acting as ns's "default".
	cluster bool
	// start creates in ns the controller and what it reads, and returns the controller's
	// name in the metrics; the parent is the Bundle p.
	start func(t *testing.T, ns string) (ctl string)
	// refusal is in the ReadRefused Event after the account (NS is ns); hook is the hook not
	// called.
	refusal, hook string
	// done says the hook ran for p.
	done func(t *testing.T, ns string) (bool, string)
}

var readChecks = []readCheck{
	{
		name: "parent-get", lacks: right("test.metascript.dev", "bundles", "get"),
		start:   statusOfWrites,
		refusal: "may not get bundles.test.metascript.dev in namespace NS", hook: "sync", done: phaseOK,
	},
	{
		name: "children", lacks: right("", "configmaps", "list"),
		start:   statusOfWrites,
		refusal: "may not list configmaps in namespace NS", hook: "sync", done: phaseOK,
	},
	{
		name: "customize-rule", lacks: right("test.metascript.dev", "copies", "list"),
		start: func(t *testing.T, ns string) string {
			relatedCounter(t, "NamespacedCompositeController", ns, "related", "",
				`{"apiVersion": "test.metascript.dev/v1", "resource": "copies", "labelSelector": {"matchLabels": {"related": "yes"}}}`)
			env.Create(t, ns, enginetest.Object(t, "apiVersion: test.metascript.dev/v1\nkind: Copy\nmetadata: {name: c, labels: {related: \"yes\"}}"))
			bundle(t, ns, "p", "related", "p")
			return "namespacedcompositecontroller/" + ns + "/related"
		},
		refusal: "may not list copies.test.metascript.dev in namespace NS", hook: "sync", done: relatedOne,
	},
	{
		name: "namespace-selector", lacks: right("", "namespaces", "list"), cluster: true,
		start: func(t *testing.T, ns string) string {
			name := "related-" + ns
			relatedCounter(t, "CompositeController", "", name, fmt.Sprintf("serviceAccount: {namespace: %s, name: reader}", ns),
				fmt.Sprintf(`{"apiVersion": "v1", "resource": "configmaps", "namespaceSelector": {"matchLabels": {"team": %q}}, "labelSelector": {"matchLabels": {"related": "yes"}}}`, ns))
			env.Patch(t, env.Get(t, "v1", "Namespace", "", ns), fmt.Sprintf(`{"metadata":{"labels":{"team":%q}}}`, ns))
			env.Create(t, ns, enginetest.Object(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, labels: {related: \"yes\"}}"))
			bundle(t, ns, "p", name, "p")
			return "compositecontroller/" + name
		},
		refusal: "may not list namespaces across the cluster", hook: "sync", done: relatedOne,
	},
	{
		name: "inputs", lacks: right("", "configmaps", "list"),
		start: func(t *testing.T, ns string) string {
			mapWritesController(t, ns)
			mapParent(t, ns)
			return "namespacedmapcontroller/" + ns + "/writes"
		},
		refusal: "may not list configmaps in namespace NS", hook: "map",
		done: func(t *testing.T, ns string) (bool, string) {
			return getCopy(t, ns, "p-in-0") != nil, "no output p-in-0"
		},
	},
}

// statusOfWrites starts testdata/tenant-writes.yaml in ns with a parent p asking for a status.
func statusOfWrites(t *testing.T, ns string) string {
	writesController(t, ns, false)
	steeredBundle(t, ns, "p", "writes", map[string]any{"status": map[string]any{"phase": "ok"}})
	return "namespacedcompositecontroller/" + ns + "/writes"
}

func phaseOK(t *testing.T, ns string) (bool, string) {
	phase, _, _ := unstructured.NestedString(read(t, bundles, ns, "p").Object, "status", "phase")
	return phase == "ok", "status.phase " + phase
}

func relatedOne(t *testing.T, ns string) (bool, string) {
	n := relatedCount(t, ns, "p")
	return n == 1, fmt.Sprintf("status.related %d, want 1", n)
}

// TestEveryReadIsChecked: for each read the engine checks before it hands a controller's
// hooks anything — the parent (get), its children and inputs, the resources a customize
// rule names and the Namespaces a namespaceSelector rule selects (list) — an account lacking
// exactly that right gets a ReadRefused Event naming it, and no hook that would have been
// handed the objects is called; the same controller acting as an account holding every right
// is. The engine's own caches hold all of it: only the check stands between. Revoked, a right
// that was held is refused: a write at once, a read within identity.ReviewTTL.
func TestEveryReadIsChecked(t *testing.T) {
	for _, c := range readChecks {
		for _, held := range []bool{false, true} {
			name := c.name + "-refused"
			if held {
				name = c.name + "-held"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ns := env.Namespace(t)
				rights := tenantRights
				if c.cluster {
					rights = append(rights[:len(rights):len(rights)], right("", "namespaces", "list"))
				}
				if !held {
					rights = rightsBut(rights, c.lacks)
				}
				account := "default"
				if c.cluster {
					account = "reader"
					grantClusterRole(t, ns, account, "reads", rights...)
				} else {
					grantRole(t, ns, account, "rights", rights...)
				}
				ctl := c.start(t, ns)
				if held {
					enginetest.Eventually(t, wait, func() (bool, string) { return c.done(t, ns) })
					return
				}
				env.WaitEvent(t, wait, ns, "p", "ReadRefused", identity.User(ns, account), strings.ReplaceAll(c.refusal, "NS", ns))
				if ok, _ := c.done(t, ns); ok || hookCalls(ctl, c.hook, "starlark", "success") > 0 {
					t.Errorf("the %s hook was called although the read was refused (%v calls)", c.hook, hookCalls(ctl, c.hook, "starlark", "success"))
				}
			})
		}
	}
	t.Run("revoked", func(t *testing.T) {
		t.Parallel()
		testRevokedRights(t)
	})
}

// testRevokedRights: a controller converging as an account that may read and write its
// children. Its right to update them revoked, the next write is refused at once: the API
// server decides. Its right to list them revoked, its reads are refused within
// identity.ReviewTTL, the time the engine remembers an answer, and no hook is called since.
func testRevokedRights(t *testing.T) {
	ns := env.Namespace(t)
	update, list := right("", "configmaps", "patch"), right("", "configmaps", "list")
	grantRole(t, ns, "default", "rights", rightsBut(rightsBut(tenantRights, update), list)...)
	revokeUpdate := grantRole(t, ns, "default", "update", update)
	revokeList := grantRole(t, ns, "default", "list", list)
	// Resynced every second: a reconcile asks whether the answer it remembers still holds.
	namespacedController(t, ns, "tenant-writes.yaml", "NAME", "writes", "FINALIZE", "", "  hooks:", "  resyncPeriodSeconds: 1\n  hooks:")
	waitControllerReadyIn(t, "NamespacedCompositeController", ns, "writes")
	ctl := "namespacedcompositecontroller/" + ns + "/writes"
	user := identity.User(ns, "default")
	b := steeredBundle(t, ns, "p", "writes", map[string]any{"items": itemList("x=1")})
	waitValue(t, ns, "p-x", "1")

	revokeUpdate()
	env.Patch(t, b, `{"spec":{"items":[{"name":"x","value":"2"}]}}`)
	env.WaitEvent(t, wait, ns, "p", "WriteFailed", user, forbidden(update))
	if v := value(read(t, configMaps, ns, "p-x")); v != "1" {
		t.Errorf("the child was updated after the revocation: %q", v)
	}
	// Granted again, at once too. (Refused every second, the write's Events would also spend
	// the parent's Event budget, client-go's 25, before the reads are refused.)
	grantRole(t, ns, "default", "update", update)
	waitValue(t, ns, "p-x", "2")

	revokeList()
	revoked := time.Now()
	env.WaitEvent(t, identity.ReviewTTL+readSlack, ns, "p", "ReadRefused", user, "may not list configmaps in namespace "+ns)
	t.Logf("reads refused %s after the revocation (bound %s)", time.Since(revoked).Round(time.Second), identity.ReviewTTL)
	calls := hookCalls(ctl, "sync", "starlark", "success")
	failedAfter(t, ctl, func() {})
	if n := hookCalls(ctl, "sync", "starlark", "success"); n != calls {
		t.Errorf("the sync hook was called %v times after its reads were refused", n-calls)
	}
}
