package rolebindingspernamespace

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/examples/internal/exampletest"
	"metascript.dev/metascript/test/enginetest"
)

// The e2e tests run the engine in-process against a real kube-apiserver and etcd, install
// the decorator in each language, and drive the sample's ClusterRole through binding, a
// binding deleted by hand, edits of both lists, a namespace that does not exist yet, opting
// out and back in, and deletion. No kube-controller-manager runs: only the finalize hook
// removes RoleBindings.

var env *enginetest.Env

func TestMain(m *testing.M) { enginetest.Main(m, enginetest.Options{}, &env) }

const (
	rbacAPI              = "rbac.authorization.k8s.io/v1"
	decorator            = "rolebindings-per-namespace"
	finalizer            = "metascript.dev/decoratorcontroller-rolebindings-per-namespace"
	namespacesAnnotation = "bind.metascript.dev/namespaces"
	subjectsAnnotation   = "bind.metascript.dev/subjects"
	boundAnnotation      = "bind.metascript.dev/bound"
	wait                 = exampletest.Wait
)

func TestRoleBindingsPerNamespace(t *testing.T) {
	for _, l := range exampletest.Languages {
		t.Run(l.Name, func(t *testing.T) {
			exampletest.RequireSupport(t, env.Engine.Runtime, l.Lang, "json", "re", "strings")
			exampletest.InstallController(t, env, l.File)
			a, b, c, taken := env.Namespace(t), env.Namespace(t), env.Namespace(t), env.Namespace(t)
			// The sample's ClusterRole, bound in this test's namespaces; named per language so
			// that a failed run leaves nothing in the next one's way. In taken, someone else's
			// RoleBinding already has its name.
			name := "configmap-reader-" + l.Name
			theirs := env.Create(t, taken, enginetest.Object(t, fmt.Sprintf(`
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: %s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[1]s}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: bob}]`, name)))
			sample := &unstructured.Unstructured{Object: exampletest.FromFile(t, "sample.yaml", "ClusterRole")}
			sample.SetName(name)
			annotate(sample, namespacesAnnotation, a+", "+b+", "+taken)
			role := env.Create(t, "", sample)
			plain := env.Create(t, "", enginetest.Object(t, fmt.Sprintf(`
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: plain-%s, annotations: {%s: "Group:everyone"}}
rules: []`, l.Name, subjectsAnnotation)))

			// Bound: one RoleBinding per listed namespace, owned by the ClusterRole, for the
			// group and for that namespace's own ServiceAccount.
			for _, ns := range []string{a, b} {
				rb := waitBinding(t, ns, name)
				if !exampletest.ControlledBy(rb, role, decorator) {
					t.Errorf("RoleBinding %s/%s owners %+v, annotations %v: want controlled by the ClusterRole and marked",
						ns, name, rb.GetOwnerReferences(), rb.GetAnnotations())
				}
				ref, _, _ := unstructured.NestedStringMap(rb.Object, "roleRef")
				if want := map[string]string{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}; !reflect.DeepEqual(ref, want) {
					t.Errorf("RoleBinding %s/%s roleRef = %v, want %v", ns, name, ref, want)
				}
				checkSubjects(t, rb, group("config-readers"), account(ns, "reporter"))
			}
			waitRole(t, name, "bound annotation and finalizer", func(r *unstructured.Unstructured) bool {
				return r.GetAnnotations()[boundAnnotation] == joined(a, b) && slices.Contains(r.GetFinalizers(), finalizer)
			})
			if rb := env.Get(t, rbacAPI, "RoleBinding", c, name); rb != nil {
				t.Errorf("RoleBinding in the unlisted namespace %s", c)
			}
			// Someone else's binding of the same name is reported and left alone; the bound
			// annotation, which lists the bindings the decorator holds, leaves it out.
			exampletest.WaitEvent(t, env, metav1.NamespaceDefault, name, "ChildConflict", taken+"/"+name)
			if rb := env.Get(t, rbacAPI, "RoleBinding", taken, name); rb.GetResourceVersion() != theirs.GetResourceVersion() {
				t.Errorf("someone else's RoleBinding was written: %v", rb.Object)
			}

			// A ClusterRole without the namespaces annotation is left alone.
			exampletest.Settle(t, env, decorator, func() { env.Patch(t, role, `{"metadata":{"labels":{"resync":"now"}}}`) })
			if cur := getRole(t, plain.GetName()); cur.GetResourceVersion() != plain.GetResourceVersion() {
				t.Errorf("a ClusterRole without the namespaces annotation was written: %v", cur.Object["metadata"])
			}
			for _, ns := range []string{a, b, c} {
				if env.Get(t, rbacAPI, "RoleBinding", ns, plain.GetName()) != nil {
					t.Errorf("a ClusterRole without the namespaces annotation was bound in %s", ns)
				}
			}

			// A RoleBinding deleted by hand comes back.
			gone := env.Get(t, rbacAPI, "RoleBinding", a, name)
			env.Delete(t, gone)
			enginetest.Eventually(t, wait, func() (bool, string) {
				rb := env.Get(t, rbacAPI, "RoleBinding", a, name)
				return rb != nil && rb.GetUID() != gone.GetUID(), "RoleBinding not recreated"
			})

			// Editing the list: a's binding goes, c's comes, b's stays as it was.
			kept := env.Get(t, rbacAPI, "RoleBinding", b, name)
			role = env.Patch(t, role, annotationPatch(namespacesAnnotation, c+","+b))
			waitBinding(t, c, name)
			waitNoBinding(t, name, a)
			if rb := env.Get(t, rbacAPI, "RoleBinding", b, name); rb.GetResourceVersion() != kept.GetResourceVersion() {
				t.Errorf("the binding in %s, listed before and after, was written", b)
			}
			waitRole(t, name, "bound annotation follows", func(r *unstructured.Unstructured) bool {
				return r.GetAnnotations()[boundAnnotation] == joined(b, c)
			})

			// Editing the subjects updates every binding in place.
			env.Patch(t, role, annotationPatch(subjectsAnnotation, "User:alice, ServiceAccount:ops/auditor"))
			for _, ns := range []string{b, c} {
				uid := env.Get(t, rbacAPI, "RoleBinding", ns, name).GetUID()
				enginetest.Eventually(t, wait, func() (bool, string) {
					rb := env.Get(t, rbacAPI, "RoleBinding", ns, name)
					subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
					return rb.GetUID() == uid && reflect.DeepEqual(subjects, []any{user("alice"), account("ops", "auditor")}),
						fmt.Sprintf("RoleBinding %s/%s (uid %s, was %s) subjects %v", ns, name, rb.GetUID(), uid, subjects)
				})
			}

			// A namespace listed before it exists: the refused create is reported in a Warning
			// Event (about a cluster-scoped object, so in the default namespace), and retried
			// until the namespace exists.
			later := a + "-later"
			env.Patch(t, role, annotationPatch(namespacesAnnotation, b+","+c+","+later))
			missing := fmt.Sprintf("namespaces %q not found", later)
			exampletest.WaitEvent(t, env, metav1.NamespaceDefault, name, "WriteFailed", missing)
			if _, err := env.Kube.CoreV1().Namespaces().Create(context.Background(),
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: later}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitBinding(t, later, name)

			// Opting out: every binding, the bound annotation and the finalizer go.
			env.Patch(t, role, annotationPatch(namespacesAnnotation, nil))
			waitNoBinding(t, name, b, c, later)
			waitRole(t, name, "opted out", func(r *unstructured.Unstructured) bool {
				_, bound := r.GetAnnotations()[boundAnnotation]
				return !bound && len(r.GetFinalizers()) == 0
			})

			// Opting in again, then deleting the ClusterRole: finalize revokes the binding, and
			// only then does the finalizer let the ClusterRole go.
			env.Patch(t, role, annotationPatch(namespacesAnnotation, b))
			waitBinding(t, b, name)
			env.Delete(t, role)
			env.Delete(t, plain)
			waitNoBinding(t, name, b)
			enginetest.Eventually(t, wait, func() (bool, string) { return getRole(t, name) == nil, "ClusterRole still exists" })
			if rb := env.Get(t, rbacAPI, "RoleBinding", taken, name); rb == nil || rb.GetResourceVersion() != theirs.GetResourceVersion() {
				t.Errorf("someone else's RoleBinding was written or deleted: %v", rb)
			}
			// The only Warnings are the conflict's and the missing namespace's.
			for _, w := range exampletest.Warnings(t, env, metav1.NamespaceDefault, "ClusterRole", name) {
				conflict := strings.HasPrefix(w, "ChildConflict: RoleBinding "+taken+"/"+name+" ")
				if !conflict && !(strings.HasPrefix(w, "WriteFailed: ") && strings.Contains(w, missing)) {
					t.Errorf("Warning event on the ClusterRole: %s", w)
				}
			}
		})
	}
}

func getRole(t *testing.T, name string) *unstructured.Unstructured {
	return env.Get(t, rbacAPI, "ClusterRole", "", name)
}

func waitRole(t *testing.T, name, what string, cond func(*unstructured.Unstructured) bool) {
	t.Helper()
	enginetest.Eventually(t, wait, func() (bool, string) {
		r := getRole(t, name)
		return r != nil && cond(r), fmt.Sprintf("%s: ClusterRole %s is %v", what, name, r)
	})
}

func waitBinding(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	var rb *unstructured.Unstructured
	enginetest.Eventually(t, wait, func() (bool, string) {
		rb = env.Get(t, rbacAPI, "RoleBinding", ns, name)
		return rb != nil, fmt.Sprintf("no RoleBinding %s/%s", ns, name)
	})
	return rb
}

func waitNoBinding(t *testing.T, name string, namespaces ...string) {
	t.Helper()
	enginetest.Eventually(t, wait, func() (bool, string) {
		var left []string
		for _, ns := range namespaces {
			if env.Get(t, rbacAPI, "RoleBinding", ns, name) != nil {
				left = append(left, ns)
			}
		}
		return len(left) == 0, fmt.Sprintf("RoleBinding %s still in %v", name, left)
	})
}

func checkSubjects(t *testing.T, rb *unstructured.Unstructured, want ...any) {
	t.Helper()
	if got, _, _ := unstructured.NestedSlice(rb.Object, "subjects"); !reflect.DeepEqual(got, want) {
		t.Errorf("RoleBinding %s/%s subjects = %v, want %v", rb.GetNamespace(), rb.GetName(), got, want)
	}
}

func group(name string) any {
	return map[string]any{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": name}
}

func user(name string) any {
	return map[string]any{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name}
}

func account(ns, name string) any {
	return map[string]any{"kind": "ServiceAccount", "namespace": ns, "name": name}
}

func annotate(obj *unstructured.Unstructured, key, value string) {
	a := obj.GetAnnotations()
	a[key] = value
	obj.SetAnnotations(a)
}

// annotationPatch sets the annotation key to value, or removes it when value is nil.
func annotationPatch(key string, value any) string {
	v, _ := json.Marshal(value)
	return fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, key, v)
}

// joined is the bound annotation for namespaces: sorted, comma-separated.
func joined(namespaces ...string) string {
	return strings.Join(slices.Sorted(slices.Values(namespaces)), ",")
}
