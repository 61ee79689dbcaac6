package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/test/enginetest"
)

// namespacedController creates the controller resource of testdata/file in namespace ns,
// with replace applied as in controller.
func namespacedController(t *testing.T, ns, file string, replace ...string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	out := env.Create(t, ns, enginetest.Object(t, strings.NewReplacer(replace...).Replace(string(data))))
	t.Cleanup(func() { env.Delete(t, out) })
	return out
}

// tenantAccount creates ServiceAccount name in ns, with a Role in each of namespaces letting
// it do everything with Bundles, Copies and ConfigMaps there and record Events.
func tenantAccount(t *testing.T, ns, name string, namespaces ...string) {
	t.Helper()
	ctx := context.Background()
	if _, err := env.Kube.CoreV1().ServiceAccounts(ns).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	for _, where := range namespaces {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "tenant-" + name}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"test.metascript.dev"}, Resources: []string{"bundles", "bundles/status", "copies"}, Verbs: all},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		}}
		if _, err := env.Kube.RbacV1().Roles(where).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Kube.RbacV1().RoleBindings(where).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: name}},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNamespacedControllerStaysInItsNamespace: a NamespacedCompositeController in team-a
// reconciles team-a's parents only, writes only there and is handed only team-a's related
// objects, whatever its hooks ask, although its ServiceAccount may write in team-b too: the
// confinement is the engine's, not RBAC's.
func TestNamespacedControllerStaysInItsNamespace(t *testing.T) {
	ctx := context.Background()
	teamA, teamB := env.Namespace(t), env.Namespace(t)
	tenantAccount(t, teamA, "tenant", teamA, teamB)
	ncc := namespacedController(t, teamA, "namespaced.yaml", "NAME", "confined", "SUITE", "confined", "ACCOUNT", "tenant")
	waitControllerReadyIn(t, "NamespacedCompositeController", teamA, ncc.GetName())
	queue := "namespacedcompositecontroller/" + teamA + "/confined"
	for _, ns := range []string{teamA, teamB} {
		env.Create(t, ns, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "source", "labels": map[string]any{"related": "yes"}}, "data": map[string]any{"value": ns}}})
	}

	// team-a's parent converges: its child in team-a, its related objects team-a's only.
	a := bundle(t, teamA, "a", "confined", "a", "x=1")
	enginetest.Eventually(t, wait, func() (bool, string) {
		cm := configMap(t, teamA, "a-x")
		seen, _, _ := unstructured.NestedMap(getBundle(t, teamA, "a").Object, "status", "relatedByNamespace")
		return value(cm) == "1" && fmt.Sprint(seen) == fmt.Sprintf("map[%s:1]", teamA),
			fmt.Sprintf("child %s, related seen %v", value(cm), seen)
	})

	// A parent in team-b is not the controller's: a witness proves its change reached the
	// engine, and nothing is written for it.
	w := witness(t, "namespaced-"+teamB)
	b := bundle(t, teamB, "b", "confined", "b", "x=1")
	actedOn(t, w, 1, func() { witnessed(t, b, "namespaced-"+teamB) })
	waitIdle(t, queue)
	if cm := configMap(t, teamB, "b-x"); cm != nil {
		t.Errorf("team-b's parent got a child: %v", cm.Object)
	}
	if st := getBundle(t, teamB, "b").Object["status"]; st != nil {
		t.Errorf("team-b's parent: status %v written, want none", st)
	}

	// Hooks that reach outside are refused whole: nothing is written, and an Event says why.
	refused := []struct {
		name, spec, want string
	}{
		{"child-elsewhere", fmt.Sprintf(`{"elsewhere":%q}`, teamB), "differs from the parent's namespace"},
		{"related-elsewhere", fmt.Sprintf(`{"relatedIn":%q}`, teamB), "in its own namespace"},
		{"related-cluster", `{"relatedCluster":true}`, "namespaces is cluster-scoped"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			failedAfter(t, queue, func() {
				p := enginetest.Object(t, fmt.Sprintf(`{"apiVersion":%q,"kind":"Bundle","metadata":{"name":%q,"labels":{"suite":"confined"}},"spec":%s}`,
					bundleAPI, c.name, c.spec))
				if err := unstructured.SetNestedField(p.Object, map[string]any{"matchLabels": map[string]any{"app": c.name}}, "spec", "selector"); err != nil {
					t.Fatal(err)
				}
				if err := unstructured.SetNestedSlice(p.Object, itemList("x=1"), "spec", "items"); err != nil {
					t.Fatal(err)
				}
				env.Create(t, teamA, p)
			})
			enginetest.Eventually(t, wait, func() (bool, string) {
				for _, msg := range env.Events(t, teamA, c.name)["InvalidHookResponse"] {
					if strings.Contains(msg, c.want) {
						return true, ""
					}
				}
				return false, fmt.Sprintf("no InvalidHookResponse Event saying %q: %v", c.want, env.Events(t, teamA, c.name))
			})
			if cm := configMap(t, teamA, c.name+"-x"); cm != nil {
				t.Errorf("a refused decision wrote child %s", cm.GetName())
			}
			if _, err := env.Kube.CoreV1().ConfigMaps(teamB).Get(ctx, c.name+"-away", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("child in team-b: %v, want not found", err)
			}
			if st := getBundle(t, teamA, c.name).Object["status"]; st != nil {
				t.Errorf("status %v written, want none", st)
			}
		})
	}

	// team-a's parent goes on converging.
	env.Patch(t, a, `{"spec":{"items":[{"name":"x","value":"2"}]}}`)
	enginetest.Eventually(t, wait, func() (bool, string) {
		v := value(configMap(t, teamA, "a-x"))
		return v == "2", "team-a's child after an edit: " + v
	})
}

// TestNamespacedControllerRefusedSpecs: a namespaced controller naming a cluster-scoped
// resource, or another namespace's account, does not run, and its Ready condition says why.
func TestNamespacedControllerRefusedSpecs(t *testing.T) {
	ns, other := env.Namespace(t), env.Namespace(t)
	cases := []struct {
		name    string
		replace []string
		want    string
	}{
		{"cluster-parent", []string{"apiVersion: test.metascript.dev/v1\n    resource: bundles", "apiVersion: v1\n    resource: namespaces"},
			"spec.parentResource: namespaces is cluster-scoped; a NamespacedCompositeController is confined to its namespace"},
		{"cluster-child", []string{"resource: configmaps\n      updateStrategy", "resource: namespaces\n      updateStrategy"},
			"spec.childResources[0]: namespaces is cluster-scoped"},
		{"other-account", []string{"{name: ACCOUNT}", fmt.Sprintf("{namespace: %s, name: tenant}", other)},
			fmt.Sprintf("spec.serviceAccount.namespace: %q is not the controller's namespace", other)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctl := namespacedController(t, ns, "namespaced.yaml", append(c.replace, "NAME", c.name, "SUITE", c.name, "ACCOUNT", "tenant")...)
			enginetest.Eventually(t, wait, func() (bool, string) {
				cur := env.Get(t, "metascript.dev/v1alpha1", "NamespacedCompositeController", ns, ctl.GetName())
				return enginetest.Condition(cur, "Ready") == "False" && strings.Contains(conditionMessage(cur, "Ready"), c.want),
					fmt.Sprintf("Ready %s: %s", enginetest.Condition(cur, "Ready"), conditionMessage(cur, "Ready"))
			})
		})
	}
}

// TestNamespacedDecoratorAndMap: the namespaced twins of DecoratorController and
// MapController run as their cluster-scoped kinds do, for their own namespace's objects
// only; their marks never name a cluster-scoped controller of the same name.
func TestNamespacedDecoratorAndMap(t *testing.T) {
	waitManagerSettled(t) // no earlier test's controller caches ConfigMaps or Copies any more
	home, away := env.Namespace(t), env.Namespace(t)
	tenantAccount(t, home, "tenant", home, away)
	dec := namespacedController(t, home, "decorator.yaml", "kind: DecoratorController", "kind: NamespacedDecoratorController",
		"  attachments:", "  serviceAccount: {name: tenant}\n  attachments:", "NAME", "nsdec", "SUITE", "nsdec", "METHOD", "InPlace")
	mc := namespacedController(t, home, "map.yaml", "kind: MapController", "kind: NamespacedMapController",
		"  inputResources:", "  serviceAccount: {name: tenant}\n  inputResources:", "NAME", "nsmap", "SUITE", "nsmap", "TOMBSTONE", "")
	waitControllerReadyIn(t, "NamespacedDecoratorController", home, dec.GetName())
	waitControllerReadyIn(t, "NamespacedMapController", home, mc.GetName())

	attach := map[string]any{"nsdec": map[string]any{"attachments": []any{map[string]any{"name": "x", "value": "1"}}}}
	target(t, home, "t", "nsdec", true, attach)
	input(t, home, "in", "m", map[string]any{"value": "1"})
	bundle(t, home, "p", "nsmap", "m")
	enginetest.Eventually(t, wait, func() (bool, string) {
		cm := configMap(t, home, "nsdec-x")
		return cm != nil && cm.GetAnnotations()["metascript.dev/decorator-controller"] == "namespaced_nsdec",
			fmt.Sprintf("attachment %v", cm)
	})
	c := waitCopy(t, home, "p-in-0", "1")
	if got := c.GetLabels()["metascript.dev/map-controller"]; got != "namespaced_nsmap" {
		t.Errorf("output's mark %q, want namespaced_nsmap", got)
	}

	// The same objects in another namespace: the witness sees them, the twins do not.
	w := witness(t, "namespaced-twins-"+away)
	input(t, away, "in", "m", map[string]any{"value": "1"})
	tb := target(t, away, "t", "nsdec", true, attach)
	pb := bundle(t, away, "p", "nsmap", "m")
	actedOn(t, w, 2, func() {
		witnessed(t, tb, "namespaced-twins-"+away)
		witnessed(t, pb, "namespaced-twins-"+away)
	})
	waitIdle(t, "namespaceddecoratorcontroller/"+home+"/nsdec")
	waitIdle(t, "namespacedmapcontroller/"+home+"/nsmap")
	if cm := configMap(t, away, "nsdec-x"); cm != nil {
		t.Errorf("the decorator attached in another namespace: %v", cm.Object)
	}
	if c := getCopy(t, away, "p-in-0"); c != nil {
		t.Errorf("the map wrote an output in another namespace: %v", c.Object)
	}
	// Nor are they cached for the twins: their attachment, input and output informers watch
	// their own namespace alone.
	for _, gvr := range []schema.GroupVersionResource{configMapsResource, copiesResource} {
		if got := cachedIn(gvr, away); len(got) != 0 {
			t.Errorf("the engine caches %s of another namespace: %v", gvr.Resource, got)
		}
	}
}
