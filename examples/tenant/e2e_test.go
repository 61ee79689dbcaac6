package tenant

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/order"
	"metascript.dev/metascript/examples/internal/exampletest"
	"metascript.dev/metascript/test/enginetest"
)

// The e2e tests run the engine in-process against a real kube-apiserver and etcd, install the
// controller in each language, and drive a Tenant from creation to deletion. No
// kube-controller-manager runs: nothing deletes what the engine leaves to the garbage
// collector.

var env *enginetest.Env

func TestMain(m *testing.M) {
	enginetest.Main(m, enginetest.Options{CRDDirs: []string{"crd.yaml"}}, &env)
}

const (
	exampleAPI = "examples.metascript.dev/v1alpha1"
	rbacAPI    = "rbac.authorization.k8s.io/v1"
	finalizer  = "metascript.dev/compositecontroller-tenant"
	wait       = exampletest.Wait
)

func TestTenant(t *testing.T) {
	for _, l := range exampletest.Languages {
		t.Run(l.Name, func(t *testing.T) {
			exampletest.InstallController(t, env, l.File)
			sample := enginetest.ObjectsFromFile(t, "sample.yaml")[0]
			name := "payments-" + l.Name
			sample.SetName(name)
			tenant := env.Create(t, "", sample)
			ns := "tenant-" + name

			// The Namespace first; the quota and bindings once it is Active, each recording
			// that it waits for it.
			enginetest.Eventually(t, wait, func() (bool, string) {
				cur := env.Get(t, exampleAPI, "Tenant", "", name)
				phase, _, _ := unstructured.NestedString(cur.Object, "status", "phase")
				return phase == "Active" && enginetest.Condition(cur, "ChildrenWaiting") == "False",
					fmt.Sprintf("status %v", cur.Object["status"])
			})
			children := []*unstructured.Unstructured{
				env.Get(t, "v1", "ResourceQuota", ns, "tenant"),
				env.Get(t, rbacAPI, "RoleBinding", ns, "tenant-admin"),
				env.Get(t, rbacAPI, "RoleBinding", ns, "tenant-view"),
			}
			for _, c := range children {
				if c == nil {
					t.Fatalf("a child in %s is missing: %v", ns, children)
				}
				if after := order.AfterOf(c); len(after) != 1 || after[0].Kind != "Namespace" || after[0].Name != ns {
					t.Errorf("%s %s records that it waits for %v, want the Namespace", c.GetKind(), c.GetName(), after)
				}
			}
			if hard, _, _ := unstructured.NestedString(children[0].Object, "spec", "hard", "pods"); hard != "20" {
				t.Errorf("quota spec.hard.pods = %q, want 20", hard)
			}
			sa, _, _ := unstructured.NestedSlice(children[2].Object, "subjects")
			if len(sa) != 2 || sa[1].(map[string]any)["namespace"] != ns {
				t.Errorf("view subjects %v: want the dashboard ServiceAccount of %s", sa, ns)
			}
			cur := env.Get(t, exampleAPI, "Tenant", "", name)
			if !hasFinalizer(cur) {
				t.Fatalf("finalizers %v: the Tenant does not hold the engine's finalizer for the ordered teardown", cur.GetFinalizers())
			}

			// A viewer list emptied: its RoleBinding goes, the rest stays.
			env.Patch(t, tenant, `{"spec":{"viewers":null}}`)
			enginetest.Eventually(t, wait, func() (bool, string) {
				return env.Get(t, rbacAPI, "RoleBinding", ns, "tenant-view") == nil, "tenant-view still there"
			})

			// Deleted: the engine deletes what waits for the Namespace, then lets the Tenant
			// go; the Namespace is the garbage collector's, after the Tenant.
			env.Delete(t, tenant)
			enginetest.Eventually(t, wait, func() (bool, string) {
				return env.Get(t, exampleAPI, "Tenant", "", name) == nil, "the Tenant is still there"
			})
			for _, c := range children[:2] {
				if env.Get(t, c.GetAPIVersion(), c.GetKind(), ns, c.GetName()) != nil {
					t.Errorf("%s %s/%s outlived its Tenant", c.GetKind(), ns, c.GetName())
				}
			}
			if nsObj := env.Get(t, "v1", "Namespace", "", ns); nsObj == nil || len(nsObj.GetOwnerReferences()) != 1 || nsObj.GetOwnerReferences()[0].Name != name {
				t.Errorf("the Namespace %s should be left to the garbage collector, owned by the Tenant: %v", ns, nsObj)
			}
		})
	}
}

func hasFinalizer(obj *unstructured.Unstructured) bool {
	for _, f := range obj.GetFinalizers() {
		if f == finalizer {
			return true
		}
	}
	return false
}
