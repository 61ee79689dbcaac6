package tenantcapacity

import (
	"context"
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"metascript.dev/metascript/engine"
)

// TestOneRateForEveryAccount: six controllers, each writing as an account of its own (so
// through an impersonating client of its own), together make no more requests than the
// engine's one QPS and burst allow: every client the engine makes draws on one rate.
func TestOneRateForEveryAccount(t *testing.T) {
	const qps, burst, window = 5, 10, 10 * time.Second
	restore := env.RestartEngineWith(t, func(o *engine.Options) {
		o.Config = rest.CopyConfig(o.Config)
		o.Config.QPS, o.Config.Burst = qps, burst
	})
	defer restore()
	ns := env.Namespace(t)
	grantAccounts(t, ns, 6)
	text := healthyText(t)
	for i := range 6 {
		name := fmt.Sprintf("rate-%d", i)
		obj := healthyObject(t, text, name)
		obj.Object["spec"].(map[string]any)["serviceAccount"] = map[string]any{"namespace": ns, "name": name}
		create(t, obj)
		t.Cleanup(func() { deleteController(name) })
	}
	for i := range 6 {
		name := fmt.Sprintf("rate-%d", i)
		waitFor(t, time.Minute, name+" to run", func() bool { return ready(name) })
	}
	env.Requests.Reset()
	for i := range 6 {
		createParents(t, ns, fmt.Sprintf("rate-%d", i), 5, 10) // 50 children each
	}
	time.Sleep(window)
	counts := env.Requests.Counts()
	total := 0
	for _, n := range counts {
		total += n
	}
	// What one rate allows in the window, and a few requests' worth of slack for the time
	// the test took to reset and read the counter.
	if most := burst + int(qps*window.Seconds()) + 5; total > most {
		t.Fatalf("%d requests in %s (%v), more than one rate of %d QPS and burst %d allows (%d)", total, window, counts, qps, burst, most)
	}
	if total < burst {
		t.Fatalf("%d requests in %s (%v): the controllers did not write", total, window, counts)
	}
}

// grantAccounts lets the accounts rate-0 ... rate-(n-1) of namespace ns do what the
// controllers need: read their parents, write their status and children, record Events.
func grantAccounts(t *testing.T, ns string, n int) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"bench.metascript.dev"}, Resources: []string{"fanouts", "fanouts/status"}, Verbs: []string{"*"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps", "events"}, Verbs: []string{"*"}},
		}}
	if _, err := env.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: ns}}
	for i := range n {
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: "ServiceAccount", Namespace: ns, Name: fmt.Sprintf("rate-%d", i)})
	}
	if _, err := env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.RbacV1().ClusterRoleBindings().Delete(ctx, ns, metav1.DeleteOptions{})
		_ = env.Kube.RbacV1().ClusterRoles().Delete(ctx, ns, metav1.DeleteOptions{})
	})
}
