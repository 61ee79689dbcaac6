package integration

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"metascript.dev/metascript/engine/identity"
	"metascript.dev/metascript/test/enginetest"
)

// TestServiceAccountDecidesReadsAndWrites: a controller naming a ServiceAccount that may read
// ConfigMaps in team-a and team-b and write them in team-a only gets its children in team-a.
// In team-b the API server refuses them: nothing is written, and a Warning Event on the
// parent names the verb, the resource and the account. In team-c, where the account may not
// even read ConfigMaps, the hook is handed nothing: a ReadRefused Event says why, and the
// parent's status stays unwritten. team-a's parent keeps converging. The engine's own
// account could do all of it: the refusals show that its reads are checked and its writes
// impersonate the ServiceAccount.
func TestServiceAccountDecidesReadsAndWrites(t *testing.T) {
	ctx := context.Background()
	home, teamA, teamB, teamC := env.Namespace(t), env.Namespace(t), env.Namespace(t), env.Namespace(t)
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
	// In team-a and team-b: read ConfigMaps. In team-a only: write them.
	grant := func(ns string, verbs ...string) {
		t.Helper()
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "children"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}}}
		if _, err := env.Kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "children"},
			Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "children"}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	grant(teamA, "get", "list", "watch", "create", "update", "patch", "delete")
	grant(teamB, "get", "list", "watch")

	cc := controller(t, "bundle-starlark.yaml", "name: bundle-starlark", "name: bundle-tenant", "suite: basic", "suite: tenant",
		"  childResources:", fmt.Sprintf("  serviceAccount: {namespace: %s, name: writer}\n  childResources:", home))
	waitControllerReady(t, "CompositeController", cc.GetName())
	a := bundle(t, teamA, "a", "tenant", "a", "x=1")
	bundle(t, teamB, "b", "tenant", "b", "x=1")
	bundle(t, teamC, "c", "tenant", "c", "x=1")

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
	env.WaitEvent(t, wait, teamB, "b", "WriteFailed", user, "create", "configmaps")
	if got := enginetest.Condition(getBundle(t, teamB, "b"), "Synced"); got != "False" {
		t.Errorf("team-b's parent: Synced %q, want False", got)
	}
	if _, err := value(teamB, "b-x"); !apierrors.IsNotFound(err) {
		t.Errorf("team-b's child: %v, want not found", err)
	}
	env.WaitEvent(t, wait, teamC, "c", "ReadRefused", user, "list configmaps in namespace "+teamC)
	if ev := env.Events(t, teamC, "c"); len(ev["WriteFailed"]) > 0 {
		t.Errorf("team-c's parent: a write was tried although its reads were refused: %v", ev["WriteFailed"])
	}
	if st := getBundle(t, teamC, "c").Object["status"]; st != nil {
		t.Errorf("team-c's parent: status %v written, want none", st)
	}

	// team-a's parent goes on converging.
	env.Patch(t, a, `{"spec":{"items":[{"name":"x","value":"2"}]}}`)
	enginetest.Eventually(t, wait, func() (bool, string) {
		v, err := value(teamA, "a-x")
		return v == "2", fmt.Sprintf("team-a's child after an edit: %q, %v", v, err)
	})
}
