package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"metascript.dev/metascript/test/enginetest"
)

// TestControllerAccountsNeedTheWritersRight: the API server refuses a namespaced controller
// naming a ServiceAccount its writer may not act as, naming the user, the account and the
// right it lacks, and admits it once the writer holds "use" on serviceaccounts.metascript.dev
// or "impersonate" on the account. An edit that keeps the account is not asked about; one
// that changes it, even implicitly to the namespace's default, is.
func TestControllerAccountsNeedTheWritersRight(t *testing.T) {
	ctx := context.Background()
	serveShipped(t)
	admin := kubernetes.NewForConfigOrDie(cp.Config)
	const ns = "team-accounts"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}) })
	grant := func(name string, subject string, rule rbacv1.PolicyRule) {
		t.Helper()
		if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: subject}},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	writers := rbacv1.PolicyRule{APIGroups: []string{"metascript.dev"}, Resources: []string{"namespacedcompositecontrollers"},
		Verbs: []string{"get", "create", "update", "delete"}}
	grant("alice-writes-controllers", "alice", writers)
	grant("bob-writes-controllers", "bob", writers)
	as := func(user string) *rest.Config {
		c := rest.CopyConfig(cp.Config)
		c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"developers"}}
		return c
	}
	controller := func(name, account string) *unstructured.Unstructured {
		sa := ""
		if account != "" {
			sa = fmt.Sprintf(`"serviceAccount":{"name":%q},`, account)
		}
		return enginetest.Object(t, fmt.Sprintf(`{"apiVersion":"metascript.dev/v1alpha1","kind":"NamespacedCompositeController",
			"metadata":{"name":%q,"namespace":%q},"spec":{%s"parentResource":{"apiVersion":"apps/v1","resource":"deployments"},
			"childResources":[{"apiVersion":"v1","resource":"configmaps"}],
			"hooks":{"sync":{"starlark":{"source":"def sync(request):\n    return {}\n"}}}}}`, name, ns, sa))
	}
	refusal := func(user, account, implicit string) string {
		return fmt.Sprintf(`spec.serviceAccount: user %q may not act as ServiceAccount %s/%s%s: it needs "use" on serviceaccounts.metascript.dev `+
			`(or "impersonate" on serviceaccounts) for that account in namespace %s`, user, ns, account, implicit, ns)
	}
	refused := func(what string, err error, want string) {
		t.Helper()
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `admission webhook "controllers.admission.metascript.dev" denied the request`) ||
			!strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want refused by the webhook: %s", what, err, want)
		}
	}

	// Without a right on the account, alice may not create a controller acting as it, nor
	// one acting as the namespace's default account.
	refused("alice creates a controller acting as powerful", create(as("alice"), controller("borrowed", "powerful"), false),
		refusal("alice", "powerful", ""))
	refused("alice creates a controller acting as the default account", create(as("alice"), controller("defaulted", ""), false),
		refusal("alice", "default", " (its namespace's default account: spec.serviceAccount is not set)"))
	if _, err := resource(cp.Config, controller("borrowed", "")).Get(ctx, "borrowed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused controller exists: get = %v", err)
	}

	// "use" on serviceaccounts.metascript.dev, named the account: allowed (once the API
	// server's authorizer has the binding).
	grant("alice-uses-powerful", "alice", rbacv1.PolicyRule{APIGroups: []string{"metascript.dev"}, Resources: []string{"serviceaccounts"},
		Verbs: []string{"use"}, ResourceNames: []string{"powerful"}})
	enginetest.Eventually(t, 30*time.Second, func() (bool, string) {
		err := create(as("alice"), controller("used", "powerful"), false)
		return err == nil, fmt.Sprintf("alice, holding use on powerful, creates a controller acting as it: %v", err)
	})
	// Editing its hooks keeps the account: not asked about. Changing the account is, and
	// so is leaving it out, which means the namespace's default.
	used, err := resource(as("alice"), controller("used", "")).Get(ctx, "used", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	edit := func(change func(spec map[string]any)) error {
		u := used.DeepCopy()
		change(u.Object["spec"].(map[string]any))
		_, err := resource(as("alice"), u).Update(ctx, u, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	if err := edit(func(spec map[string]any) {
		spec["hooks"] = map[string]any{"sync": map[string]any{"starlark": map[string]any{"source": "def sync(request):\n    return {\"status\": {}}\n"}}}
	}); err != nil {
		t.Errorf("alice edits the hooks of a controller acting as powerful: %v", err)
	}
	refused("alice moves the controller to another account", edit(func(spec map[string]any) {
		spec["serviceAccount"] = map[string]any{"name": "other"}
	}), refusal("alice", "other", ""))
	refused("alice drops the controller's account", edit(func(spec map[string]any) { delete(spec, "serviceAccount") }),
		refusal("alice", "default", " (its namespace's default account: spec.serviceAccount is not set)"))

	// "impersonate" on the account, RBAC's own right: allowed too.
	refused("bob creates a controller acting as powerful", create(as("bob"), controller("impersonated", "powerful"), false),
		refusal("bob", "powerful", ""))
	grant("bob-impersonates-powerful", "bob", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"},
		Verbs: []string{"impersonate"}, ResourceNames: []string{"powerful"}})
	enginetest.Eventually(t, 30*time.Second, func() (bool, string) {
		err := create(as("bob"), controller("impersonated", "powerful"), false)
		return err == nil, fmt.Sprintf("bob, holding impersonate on powerful, creates a controller acting as it: %v", err)
	})
	// Neither right reaches another account.
	refused("bob creates a controller acting as another account", create(as("bob"), controller("other", "other"), false),
		refusal("bob", "other", ""))
}
