// Package tenantpolicy runs the engine with metascript run's rules for tenants against a
// real API server: a namespaced controller acts as its namespace's default ServiceAccount
// only, and its webhooks connect only where the tenant webhook policy lets them, follow no
// redirect and quote no response body. Its one allowance, as a platform's would be, is the
// loopback address 127.0.0.1, where the tests' allowed webhooks listen; refused ones listen
// on 127.0.0.2, and one on 127.0.0.1 at a port standing for one of the engine's own.
package tenantpolicy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/test/enginetest"
)

var (
	env *enginetest.Env
	// enginePort listens on 127.0.0.1 at a port the engine is told is its own.
	enginePort net.Listener
)

const (
	wait      = 20 * time.Second
	widgetAPI = "tenantpolicy.metascript.dev/v1"
)

func TestMain(m *testing.M) {
	var err error
	if enginePort, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	port := uint16(enginePort.Addr().(*net.TCPAddr).Port)
	enginetest.Main(m, enginetest.Options{
		CRDDirs: []string{filepath.Join("testdata", "crds")},
		TenantWebhooks: &hooks.Egress{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, EnginePorts: []uint16{port},
			Setting: "--tenant-webhook-allow"},
	}, &env)
}

// tenantNamespace is a fresh namespace whose default ServiceAccount may do what the
// controllers of these tests need: read Widgets and write their status, write ConfigMaps,
// record Events.
func tenantNamespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns := env.Namespace(t)
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"tenantpolicy.metascript.dev"}, Resources: []string{"widgets", "widgets/status"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}}
	if _, err := env.Kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "default"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "tenant"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// namespacedController creates testdata/widgets.yaml's controller name in ns, of the Widgets
// labelled suite=name, with account ("" for none: a serviceAccount line otherwise) and
// sync hook hook, and deletes it when the test ends.
func namespacedController(t *testing.T, ns, name, account, hook string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "widgets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("NAME", name, "SUITE", name, "ACCOUNT", account, "HOOK", hook).Replace(string(data))
	out := env.Create(t, ns, enginetest.Object(t, text))
	t.Cleanup(func() { env.Delete(t, out) })
	return out
}

// widget creates a Widget of suite in ns asking for value: a ConfigMap NAME-child labelled
// widget=NAME, which its selector selects.
func widget(t *testing.T, ns, name, suite, value string) *unstructured.Unstructured {
	t.Helper()
	return env.Create(t, ns, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widgetAPI, "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"suite": suite}},
		"spec": map[string]any{"value": value,
			"selector": map[string]any{"matchLabels": map[string]any{"widget": name}}},
	}})
}

// childValue is the value of Widget name's ConfigMap child, "" while there is none.
func childValue(t *testing.T, ns, name string) string {
	t.Helper()
	cm := env.Get(t, "v1", "ConfigMap", ns, name+"-child")
	if cm == nil {
		return ""
	}
	v, _, _ := unstructured.NestedString(cm.Object, "data", "value")
	return v
}

// ready is the Ready condition of the controller: status, reason and message.
func ready(t *testing.T, ctl *unstructured.Unstructured) (status, reason, message string) {
	t.Helper()
	cur := env.Get(t, ctl.GetAPIVersion(), ctl.GetKind(), ctl.GetNamespace(), ctl.GetName())
	if cur == nil {
		return "", "", "no controller"
	}
	conds, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Ready" {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
		}
	}
	return "", "", "no Ready condition"
}
