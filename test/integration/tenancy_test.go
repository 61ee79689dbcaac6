package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"metascript.dev/metascript/engine/identity"
	"metascript.dev/metascript/test/enginetest"
)

// TestServiceAccountDecidesWrites: a controller naming a ServiceAccount that may write
// ConfigMaps in team-a only gets its children in team-a; in team-b the API server refuses
// them, nothing is written, a Warning Event on the parent names the verb, the resource and
// the account, and team-a's parent keeps converging. The engine's own account could write
// both: the refusal shows the writes impersonate the ServiceAccount.
func TestServiceAccountDecidesWrites(t *testing.T) {
	ctx := context.Background()
	home, teamA, teamB := env.Namespace(t), env.Namespace(t), env.Namespace(t)
	user := identity.User(home, "writer")
	if _, err := env.Kube.CoreV1().ServiceAccounts(home).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "writer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: home, Name: "writer"}}
	// Everywhere: read its parents, write their status, record Events.
	parents := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "tenant-parents-" + home}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"test.metascript.dev"}, Resources: []string{"bundles"}, Verbs: []string{"get"}},
		{APIGroups: []string{"test.metascript.dev"}, Resources: []string{"bundles/status"}, Verbs: []string{"patch", "update"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}}
	if _, err := env.Kube.RbacV1().ClusterRoles().Create(ctx, parents, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Kube.RbacV1().ClusterRoles().Delete(ctx, parents.Name, metav1.DeleteOptions{}) })
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: parents.Name}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: parents.Name}}
	if _, err := env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Kube.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}) })
	// In team-a only: ConfigMaps.
	children := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "children"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "update", "patch", "delete"}},
	}}
	if _, err := env.Kube.RbacV1().Roles(teamA).Create(ctx, children, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.RbacV1().RoleBindings(teamA).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "children"},
		Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "children"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cc := controller(t, "bundle-starlark.yaml", "name: bundle-starlark", "name: bundle-tenant", "suite: basic", "suite: tenant",
		"  childResources:", fmt.Sprintf("  serviceAccount: {namespace: %s, name: writer}\n  childResources:", home))
	waitControllerReady(t, "CompositeController", cc.GetName())
	a := bundle(t, teamA, "a", "tenant", "a", "x=1")
	bundle(t, teamB, "b", "tenant", "b", "x=1")

	value := func(ns, name string) (string, error) {
		cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return cm.Data["value"], nil
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		v, err := value(teamA, "a-x")
		return v == "1", fmt.Sprintf("team-a's child: %q, %v", v, err)
	})
	enginetest.Eventually(t, wait, func() (bool, string) {
		for _, msg := range env.Events(t, teamB, "b")["WriteFailed"] {
			if strings.Contains(msg, user) && strings.Contains(msg, "create") && strings.Contains(msg, "configmaps") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no WriteFailed Event naming create, configmaps and %s; events %v", user, env.Events(t, teamB, "b"))
	})
	if got := enginetest.Condition(getBundle(t, teamB, "b"), "Synced"); got != "False" {
		t.Errorf("team-b's parent: Synced %q, want False", got)
	}
	if _, err := value(teamB, "b-x"); !apierrors.IsNotFound(err) {
		t.Errorf("team-b's child: %v, want not found", err)
	}

	// team-a's parent goes on converging.
	env.Patch(t, a, `{"spec":{"items":[{"name":"x","value":"2"}]}}`)
	enginetest.Eventually(t, wait, func() (bool, string) {
		v, err := value(teamA, "a-x")
		return v == "2", fmt.Sprintf("team-a's child after an edit: %q, %v", v, err)
	})
}
