package integration

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/composite"
	"metascript.dev/metascript/test/enginetest"
)

const rbacAPI = "rbac.authorization.k8s.io/v1"

// TestChildrenBeyondTheParentsNamespace: a namespaced Bundle has ConfigMaps in two other
// namespaces and a ClusterRole. They carry the parent's UID and the controller's labels and
// no owner reference, and count as its children. An object of a desired name the engine did
// not create is never touched, and the parent reports the conflict. Deleting the parent
// deletes every child beyond its namespace, and then the parent goes.
func TestChildrenBeyondTheParentsNamespace(t *testing.T) {
	home, away1, away2 := env.Namespace(t), env.Namespace(t), env.Namespace(t)
	role := "beyond-" + home
	controller(t, "beyond.yaml", "NAME", "beyond", "SUITE", "beyond")
	waitControllerReady(t, "CompositeController", "beyond")
	t.Cleanup(func() {
		for _, name := range []string{role, role + "-taken"} {
			if cr := env.Get(t, rbacAPI, "ClusterRole", "", name); cr != nil {
				env.Delete(t, cr)
			}
		}
	})

	// Someone else's ConfigMap holds the name the parent will want in away2.
	taken := env.Create(t, away2, enginetest.Object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p-away"},"data":{"value":"theirs"}}`))

	p := bundle(t, home, "p", "beyond", "p")
	p = env.Patch(t, p, fmt.Sprintf(`{"spec":{"namespaces":[%q,%q],"clusterRole":%q}}`, away1, away2, role))

	// The children it may have are created, labelled, without an owner reference.
	var away, cr *unstructured.Unstructured
	enginetest.Eventually(t, wait, func() (bool, string) {
		away, cr = configMap(t, away1, "p-away"), env.Get(t, rbacAPI, "ClusterRole", "", role)
		return away != nil && cr != nil, fmt.Sprintf("ConfigMap %s/p-away %v, ClusterRole %s %v", away1, away != nil, role, cr != nil)
	})
	for _, o := range []*unstructured.Unstructured{away, cr} {
		l := o.GetLabels()
		if l[claim.ParentUIDLabel] != string(p.GetUID()) || l[composite.ControllerLabel] != "beyond" {
			t.Errorf("%s %s: labels %v, want %s=%s and %s=beyond", o.GetKind(), o.GetName(), l,
				claim.ParentUIDLabel, p.GetUID(), composite.ControllerLabel)
		}
		if refs := o.GetOwnerReferences(); len(refs) != 0 {
			t.Errorf("%s %s: ownerReferences %v, want none", o.GetKind(), o.GetName(), refs)
		}
	}
	if home := configMap(t, home, "p-home"); home == nil || !controlledBy(home, p) {
		t.Errorf("the child in the parent's namespace is missing or not controlled by it: %v", home)
	}

	// The name another holds: left alone, and the parent says why.
	enginetest.Eventually(t, wait, func() (bool, string) {
		for _, m := range env.Events(t, home, "p")["ChildConflict"] {
			if strings.Contains(m, away2+"/p-away") && strings.Contains(m, "did not create") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("events %v", env.Events(t, home, "p"))
	})

	// The parent holds the finalizer and counts its children: home, away1 and the ClusterRole.
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := getBundle(t, home, "p")
		n, _, _ := unstructured.NestedInt64(cur.Object, "status", "children")
		return n == 3 && len(cur.GetFinalizers()) == 1, fmt.Sprintf("status %v finalizers %v", cur.Object["status"], cur.GetFinalizers())
	})

	// A drifted child beyond the namespace is repaired (its events reach the parent).
	env.Patch(t, away, `{"data":{"value":"drifted"}}`)
	enginetest.Eventually(t, wait, func() (bool, string) {
		v := value(configMap(t, away1, "p-away"))
		return v == away1, "value " + v
	})

	// Deleting the parent deletes every child beyond its namespace, then the parent goes.
	env.Delete(t, p)
	enginetest.Eventually(t, wait, func() (bool, string) {
		a, c, parent := configMap(t, away1, "p-away"), env.Get(t, rbacAPI, "ClusterRole", "", role), getBundle(t, home, "p")
		return a == nil && c == nil && parent == nil, fmt.Sprintf("away %v, ClusterRole %v, parent %v", a != nil, c != nil, parent != nil)
	})
	if got := configMap(t, away2, "p-away"); got == nil || value(got) != "theirs" || got.GetResourceVersion() != taken.GetResourceVersion() {
		t.Errorf("the object the engine did not create was touched: %v", got)
	}
}

// TestNamespacedControllerReachesNoFurther: a NamespacedCompositeController naming a
// cluster-scoped child resource is refused, at the field.
func TestNamespacedControllerReachesNoFurther(t *testing.T) {
	ns := env.Namespace(t)
	ncc := namespacedController(t, ns, "beyond-namespaced.yaml", "NAME", "reach")
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := env.Get(t, "metascript.dev/v1alpha1", "NamespacedCompositeController", ns, ncc.GetName())
		msg := conditionMessage(cur, "Ready")
		return enginetest.Condition(cur, "Ready") == "False" && strings.Contains(msg, "spec.childResources[0]") &&
			strings.Contains(msg, "clusterroles.rbac.authorization.k8s.io is cluster-scoped") &&
			strings.Contains(msg, "a NamespacedCompositeController is confined to its namespace"), "Ready: " + msg
	})
}
