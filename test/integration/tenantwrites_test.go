package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/engine/identity"
	"metascript.dev/metascript/test/enginetest"
)

var (
	bundles    = schema.GroupVersionResource{Group: "test.metascript.dev", Version: "v1", Resource: "bundles"}
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// tenantRights is everything a tenant's account may need for the controllers of these
// tests, in its namespace: its parents (Bundles, their status and finalizers, a decorator's
// labels), its children, attachments and outputs (ConfigMaps, Copies), the ControllerRevisions
// of rolling updates, and Events.
var tenantRights = []rbacv1.PolicyRule{
	{APIGroups: []string{"test.metascript.dev"}, Resources: []string{"bundles"}, Verbs: []string{"get", "list", "watch", "patch", "update"}},
	{APIGroups: []string{"test.metascript.dev"}, Resources: []string{"bundles/status"}, Verbs: []string{"get", "patch", "update"}},
	{APIGroups: []string{"test.metascript.dev"}, Resources: []string{"copies"}, Verbs: allVerbs},
	{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: allVerbs},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	{APIGroups: []string{"metascript.dev"}, Resources: []string{"controllerrevisions"}, Verbs: allVerbs},
}

var allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// right is the rule allowing verb on resource of group, and nothing else.
func right(group, resource, verb string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: []string{verb}}
}

// rightsBut is rights without the one right lacks names (one verb of one resource).
func rightsBut(rights []rbacv1.PolicyRule, lacks rbacv1.PolicyRule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(rights))
	for _, r := range rights {
		if slices.Equal(r.APIGroups, lacks.APIGroups) && slices.Equal(r.Resources, lacks.Resources) {
			r.Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == lacks.Verbs[0] })
		}
		if len(r.Verbs) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// forbidden is how the API server words its refusal of the one right in rule.
func forbidden(rule rbacv1.PolicyRule) string {
	return fmt.Sprintf("cannot %s resource %q in API group %q", rule.Verbs[0], rule.Resources[0], rule.APIGroups[0])
}

// read is the object ns/name of gvr, nil when there is none. Unlike env.Get it asks no
// discovery: the write tests poll many objects at once.
func read(t *testing.T, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := env.Dynamic.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("getting %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return obj
}

// poke changes an annotation of Bundle ns/name, so that its controllers reconcile it now
// rather than when their backoff ends.
func poke(t *testing.T, ns, name string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.metascript.dev/poke":"%d"}}}`, time.Now().UnixNano())
	if _, err := env.Dynamic.Resource(bundles).Namespace(ns).Patch(context.Background(), name, types.MergePatchType,
		[]byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// steeredBundle creates Bundle ns/name labelled suite=suite, selecting app=name, with the
// spec fields of spec besides.
func steeredBundle(t *testing.T, ns, name, suite string, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	s := map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": name}}}
	for k, v := range spec {
		s[k] = v
	}
	return env.Create(t, ns, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": bundleAPI, "kind": "Bundle",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"suite": suite}},
		"spec":     s,
	}})
}

// writesController creates testdata/tenant-writes.yaml named writes in ns, with a finalize
// hook when finalize, and waits until it runs. It acts as ns's default account.
func writesController(t *testing.T, ns string, finalize bool) {
	t.Helper()
	hook := ""
	if finalize {
		hook = finalizeHook
	}
	namespacedController(t, ns, "tenant-writes.yaml", "NAME", "writes", "FINALIZE", hook)
	waitControllerReadyIn(t, "NamespacedCompositeController", ns, "writes")
}

// ownFinalizer is the first metascript.dev finalizer of obj, "" when it has none.
func ownFinalizer(obj *unstructured.Unstructured) string {
	for _, f := range obj.GetFinalizers() {
		if strings.HasPrefix(f, "metascript.dev/") {
			return f
		}
	}
	return ""
}

// writePath is one kind of write the engine makes for a controller, made impossible by the
// one right its account lacks.
type writePath struct {
	name  string
	lacks rbacv1.PolicyRule // one verb of one resource
	// controller creates the controller in ns and waits until it runs.
	controller func(t *testing.T, ns string)
	// before, when set, runs while the account still holds the right: it makes what the
	// write then changes. Otherwise the account lacks the right from the start.
	before func(t *testing.T, ns string)
	// write asks for the write.
	write func(t *testing.T, ns string)
	// parent is the Bundle the refusal is reported on; words, in its WriteFailed Event
	// besides the API server's, name the write.
	parent, words string
	// unwritten says what of the refused write is there anyway: "" when nothing.
	unwritten func(t *testing.T, ns string) string
	// written says whether the write was made, once the right is granted.
	written func(t *testing.T, ns string) (bool, string)
}

// writePaths are every write the engine makes for a controller: children (create, update,
// delete, adoption, release), a parent's status and conditions, its finalizer (added, and
// removed by the finalize hook's answer), ControllerRevisions of both rolling strategies
// (written on the first rollout and on a change), a decorator's labels, annotations and
// status on its target and its attachments, a MapController's outputs and its parent's
// status. The Events a hook asks for are TestOnlyHookEventsGoAsTheAccount's.
var writePaths = []writePath{
	{
		name: "child-create", lacks: right("", "configmaps", "create"), parent: "p", words: "ConfigMap",
		controller: func(t *testing.T, ns string) { writesController(t, ns, false) },
		write:      func(t *testing.T, ns string) { bundle(t, ns, "p", "writes", "p", "x=1") },
		unwritten:  childThere("p-x"),
		written:    childValue("p-x", "1"),
	},
	{
		name: "child-update", lacks: right("", "configmaps", "patch"), parent: "p", words: "ConfigMap",
		controller: func(t *testing.T, ns string) { writesController(t, ns, false) },
		write: func(t *testing.T, ns string) {
			b := bundle(t, ns, "p", "writes", "p", "x=1")
			waitValue(t, ns, "p-x", "1")
			env.Patch(t, b, `{"spec":{"items":[{"name":"x","value":"2"}]}}`)
		},
		unwritten: func(t *testing.T, ns string) string {
			if v := value(read(t, configMaps, ns, "p-x")); v != "1" {
				return "child p-x holds " + v
			}
			return ""
		},
		written: childValue("p-x", "2"),
	},
	{
		name: "child-delete", lacks: right("", "configmaps", "delete"), parent: "p", words: "ConfigMap",
		controller: func(t *testing.T, ns string) { writesController(t, ns, false) },
		write: func(t *testing.T, ns string) {
			b := bundle(t, ns, "p", "writes", "p", "x=1", "y=2")
			waitValue(t, ns, "p-y", "2")
			env.Patch(t, b, `{"spec":{"items":[{"name":"x","value":"1"}]}}`)
		},
		unwritten: func(t *testing.T, ns string) string {
			if cm := read(t, configMaps, ns, "p-y"); cm == nil || cm.GetDeletionTimestamp() != nil {
				return "child p-y deleted"
			}
			return ""
		},
		written: func(t *testing.T, ns string) (bool, string) {
			cm := read(t, configMaps, ns, "p-y")
			return cm == nil || cm.GetDeletionTimestamp() != nil, "child p-y still there"
		},
	},
	{
		name: "adoption", lacks: right("", "configmaps", "patch"), parent: "p", words: "(adopting)",
		controller: func(t *testing.T, ns string) { writesController(t, ns, false) },
		write: func(t *testing.T, ns string) {
			env.Create(t, ns, enginetest.Object(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p-x, labels: {app: p}}\ndata: {value: \"1\"}"))
			bundle(t, ns, "p", "writes", "p", "x=1")
		},
		unwritten: func(t *testing.T, ns string) string {
			if refs := read(t, configMaps, ns, "p-x").GetOwnerReferences(); len(refs) > 0 {
				return fmt.Sprintf("orphan p-x has owners %v", refs)
			}
			return ""
		},
		written: func(t *testing.T, ns string) (bool, string) {
			cm := read(t, configMaps, ns, "p-x")
			return controlledBy(cm, read(t, bundles, ns, "p")), fmt.Sprintf("p-x owners %v", cm.GetOwnerReferences())
		},
	},
	{
		name: "release", lacks: right("", "configmaps", "patch"), parent: "p", words: "(releasing)",
		controller: func(t *testing.T, ns string) { writesController(t, ns, false) },
		write: func(t *testing.T, ns string) {
			b := bundle(t, ns, "p", "writes", "p", "x=1")
			waitValue(t, ns, "p-x", "1")
			// p-x no longer matches: released, not deleted; p-y is made instead.
			env.Patch(t, b, `{"spec":{"selector":{"matchLabels":{"app":"q"}},"items":[{"name":"y","value":"1"}]}}`)
		},
		unwritten: func(t *testing.T, ns string) string {
			if refs := read(t, configMaps, ns, "p-x").GetOwnerReferences(); len(refs) == 0 {
				return "p-x was released"
			}
			return ""
		},
		written: func(t *testing.T, ns string) (bool, string) {
			refs := read(t, configMaps, ns, "p-x").GetOwnerReferences()
			return len(refs) == 0, fmt.Sprintf("p-x owners %v", refs)
		},
	},
	{
		name: "status-and-conditions", lacks: right("test.metascript.dev", "bundles/status", "patch"), parent: "p", words: "Bundle",
		controller: func(t *testing.T, ns string) { writesController(t, ns, false) },
		write: func(t *testing.T, ns string) {
			steeredBundle(t, ns, "p", "writes", map[string]any{"status": map[string]any{"phase": "ok",
				"conditions": []any{map[string]any{"type": "Written", "status": "True", "reason": "Asked", "message": "asked"}}}})
		},
		// Neither the hook's status nor the engine's Synced condition: both go as the account.
		unwritten: parentStatus("p"),
		written: func(t *testing.T, ns string) (bool, string) {
			b := read(t, bundles, ns, "p")
			phase, _, _ := unstructured.NestedString(b.Object, "status", "phase")
			return phase == "ok" && enginetest.Condition(b, "Written") == "True", fmt.Sprintf("status %v", b.Object["status"])
		},
	},
	{
		name: "finalizer-add", lacks: right("test.metascript.dev", "bundles", "patch"), parent: "p", words: "Bundle",
		controller: func(t *testing.T, ns string) { writesController(t, ns, true) },
		write:      func(t *testing.T, ns string) { bundle(t, ns, "p", "writes", "p", "x=1") },
		unwritten: func(t *testing.T, ns string) string {
			b := read(t, bundles, ns, "p")
			if f := ownFinalizer(b); f != "" {
				return "finalizer " + f
			}
			if cm := read(t, configMaps, ns, "p-x"); cm != nil {
				return "child p-x, before the finalizer that guards it"
			}
			return ""
		},
		written: func(t *testing.T, ns string) (bool, string) {
			b := read(t, bundles, ns, "p")
			return ownFinalizer(b) != "" && read(t, configMaps, ns, "p-x") != nil, fmt.Sprintf("finalizers %v", b.GetFinalizers())
		},
	},
	{
		name: "finalizer-remove", lacks: right("test.metascript.dev", "bundles", "patch"), parent: "p", words: "Bundle",
		controller: func(t *testing.T, ns string) { writesController(t, ns, true) },
		before: func(t *testing.T, ns string) {
			bundle(t, ns, "p", "writes", "p")
			enginetest.Eventually(t, wait, func() (bool, string) {
				b := read(t, bundles, ns, "p")
				return ownFinalizer(b) != "", fmt.Sprintf("finalizers %v", b.GetFinalizers())
			})
		},
		write: func(t *testing.T, ns string) { env.Delete(t, read(t, bundles, ns, "p")) },
		unwritten: func(t *testing.T, ns string) string {
			if b := read(t, bundles, ns, "p"); b == nil || ownFinalizer(b) == "" {
				return "the finalizer was removed"
			}
			return ""
		},
		written: func(t *testing.T, ns string) (bool, string) {
			if b := read(t, bundles, ns, "p"); b != nil {
				return false, fmt.Sprintf("the parent is still there, finalizers %v", b.GetFinalizers())
			}
			return true, ""
		},
	},
	{
		name: "revisions-rolling-recreate", lacks: right("metascript.dev", "controllerrevisions", "patch"), parent: "p", words: "ControllerRevision",
		controller: rollingController("RollingRecreate"),
		write:      func(t *testing.T, ns string) { rollingBundle(t, ns, "p", "writes", "v1") },
		unwritten: func(t *testing.T, ns string) string {
			// The revisions are written before any child.
			if n := revisionCount(t, ns); n > 0 || getCopy(t, ns, "p-0") != nil {
				return fmt.Sprintf("%d revisions, child p-0 %s", n, copyState(t, ns, "p-0"))
			}
			return ""
		},
		written: func(t *testing.T, ns string) (bool, string) {
			n := revisionCount(t, ns)
			return n == 1 && copyState(t, ns, "p-0") == "v1/", fmt.Sprintf("%d revisions, child p-0 %s", n, copyState(t, ns, "p-0"))
		},
	},
	{
		name: "revisions-rolling-in-place", lacks: right("metascript.dev", "controllerrevisions", "patch"), parent: "p", words: "ControllerRevision",
		controller: rollingController("RollingInPlace"),
		before: func(t *testing.T, ns string) {
			rollingBundle(t, ns, "p", "writes", "v1")
			waitCopies(t, ns, map[string]string{"p-0": "v1/", "p-1": "v1/", "p-2": "v1/"})
			for i := range 3 {
				setReady(t, ns, fmt.Sprintf("p-%d", i), true)
			}
		},
		write: func(t *testing.T, ns string) {
			env.Patch(t, read(t, bundles, ns, "p"), `{"spec":{"template":{"value":"v2"}}}`)
		},
		unwritten: func(t *testing.T, ns string) string {
			if n := revisionCount(t, ns); n != 1 || copyState(t, ns, "p-0") != "v1/" {
				return fmt.Sprintf("%d revisions, child p-0 %s", n, copyState(t, ns, "p-0"))
			}
			return ""
		},
		written: func(t *testing.T, ns string) (bool, string) {
			return copyState(t, ns, "p-0") == "v2/", "child p-0 " + copyState(t, ns, "p-0")
		},
	},
	{
		name: "decorator-labels", lacks: right("test.metascript.dev", "bundles", "patch"), parent: "t", words: "Bundle",
		controller: decoratorController,
		write: func(t *testing.T, ns string) {
			target(t, ns, "t", "writes", true, map[string]any{"writes": map[string]any{
				"labels": map[string]any{"team": "a"}, "annotations": map[string]any{"test.metascript.dev/note": "a"}}})
		},
		unwritten: func(t *testing.T, ns string) string {
			b := read(t, bundles, ns, "t")
			if b.GetLabels()["team"] != "" || b.GetAnnotations()["test.metascript.dev/note"] != "" {
				return fmt.Sprintf("labels %v, annotations %v", b.GetLabels(), b.GetAnnotations())
			}
			return ""
		},
		written: func(t *testing.T, ns string) (bool, string) {
			b := read(t, bundles, ns, "t")
			return b.GetLabels()["team"] == "a" && b.GetAnnotations()["test.metascript.dev/note"] == "a",
				fmt.Sprintf("labels %v, annotations %v", b.GetLabels(), b.GetAnnotations())
		},
	},
	{
		name: "decorator-status", lacks: right("test.metascript.dev", "bundles/status", "patch"), parent: "t", words: "Bundle",
		controller: decoratorController,
		write: func(t *testing.T, ns string) {
			target(t, ns, "t", "writes", true, map[string]any{"writes": map[string]any{"status": map[string]any{"phase": "ok"}}})
		},
		unwritten: parentStatus("t"),
		written: func(t *testing.T, ns string) (bool, string) {
			b := read(t, bundles, ns, "t")
			phase, _, _ := unstructured.NestedString(b.Object, "status", "phase")
			return phase == "ok", fmt.Sprintf("status %v", b.Object["status"])
		},
	},
	{
		name: "decorator-attachment", lacks: right("", "configmaps", "create"), parent: "t", words: "ConfigMap",
		controller: decoratorController,
		write: func(t *testing.T, ns string) {
			target(t, ns, "t", "writes", true, map[string]any{"writes": map[string]any{
				"attachments": []any{map[string]any{"name": "x", "value": "1"}}}})
		},
		unwritten: childThere("writes-x"),
		written:   childValue("writes-x", "1"),
	},
	{
		name: "map-output", lacks: right("test.metascript.dev", "copies", "create"), parent: "p", words: "Copy",
		controller: mapWritesController,
		write:      mapParent,
		unwritten: func(t *testing.T, ns string) string {
			if c := getCopy(t, ns, "p-in-0"); c != nil {
				return "output p-in-0"
			}
			return ""
		},
		written: func(t *testing.T, ns string) (bool, string) {
			return copyState(t, ns, "p-in-0") == "1/", "output p-in-0 " + copyState(t, ns, "p-in-0")
		},
	},
	{
		name: "map-status", lacks: right("test.metascript.dev", "bundles/status", "patch"), parent: "p", words: "Bundle",
		controller: mapWritesController,
		write:      mapParent,
		unwritten:  parentStatus("p"),
		written: func(t *testing.T, ns string) (bool, string) {
			b := read(t, bundles, ns, "p")
			n, _, _ := unstructured.NestedInt64(b.Object, "status", "outputs", "copies", "total")
			return n == 1 && enginetest.Condition(b, "Mapped") == "True", fmt.Sprintf("status %v", b.Object["status"])
		},
	},
}

func childThere(name string) func(t *testing.T, ns string) string {
	return func(t *testing.T, ns string) string {
		if cm := read(t, configMaps, ns, name); cm != nil {
			return "ConfigMap " + name
		}
		return ""
	}
}

func childValue(name, want string) func(t *testing.T, ns string) (bool, string) {
	return func(t *testing.T, ns string) (bool, string) {
		v := value(read(t, configMaps, ns, name))
		return v == want, fmt.Sprintf("ConfigMap %s holds %q, want %q", name, v, want)
	}
}

func parentStatus(name string) func(t *testing.T, ns string) string {
	return func(t *testing.T, ns string) string {
		if st := read(t, bundles, ns, name).Object["status"]; st != nil {
			return fmt.Sprintf("status %v", st)
		}
		return ""
	}
}

// rollingController is testdata/rolling.yaml, namespaced, named writes, rolling by method.
func rollingController(method string) func(t *testing.T, ns string) {
	return func(t *testing.T, ns string) {
		t.Helper()
		namespacedController(t, ns, "rolling.yaml", "kind: CompositeController", "kind: NamespacedCompositeController",
			"NAME", "writes", "SUITE", "writes", "METHOD", method)
		waitControllerReadyIn(t, "NamespacedCompositeController", ns, "writes")
	}
}

// decoratorController is testdata/decorator.yaml, namespaced, named writes, without its
// finalize hook: the finalizer would be the decorator's first write.
func decoratorController(t *testing.T, ns string) {
	t.Helper()
	namespacedController(t, ns, "decorator.yaml", "kind: DecoratorController", "kind: NamespacedDecoratorController",
		"    finalize:\n      starlark: {function: finalize}\n", "", "NAME", "writes", "SUITE", "writes", "METHOD", "InPlace")
	waitControllerReadyIn(t, "NamespacedDecoratorController", ns, "writes")
}

// mapWritesController is testdata/map.yaml, namespaced, named writes.
func mapWritesController(t *testing.T, ns string) {
	t.Helper()
	namespacedController(t, ns, "map.yaml", "kind: MapController", "kind: NamespacedMapController",
		"NAME", "writes", "SUITE", "writes", "TOMBSTONE", "")
	waitControllerReadyIn(t, "NamespacedMapController", ns, "writes")
}

// mapParent makes one input and the parent mapping it: one output, p-in-0.
func mapParent(t *testing.T, ns string) {
	input(t, ns, "in", "m", map[string]any{"value": "1"})
	bundle(t, ns, "p", "writes", "m")
}

// TestEveryWriteGoesAsTheAccount: for each write the engine makes for a controller, the
// controller's account lacks exactly the right that write needs and holds every other. The
// API server refuses the write: nothing of it is made, a WriteFailed Event on the parent
// names the account, the verb and the resource, and so does Synced=False where the account
// may still write the parent's status. Granted that right, the write is made. The engine's
// own account could make every one of them: a write sent with it would not be refused.
func TestEveryWriteGoesAsTheAccount(t *testing.T) {
	for _, c := range writePaths {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			user := identity.User(ns, "default")
			grantRole(t, ns, "default", "rights", rightsBut(tenantRights, c.lacks)...)
			c.controller(t, ns)
			if c.before != nil {
				revoke := grantRole(t, ns, "default", "right", c.lacks)
				c.before(t, ns)
				revoke()
			}
			c.write(t, ns)

			refusal := forbidden(c.lacks)
			env.WaitEvent(t, wait, ns, c.parent, "WriteFailed", c.words, user, refusal)
			if got := c.unwritten(t, ns); got != "" {
				t.Errorf("refused, and yet written: %s", got)
			}
			if c.lacks.Resources[0] != "bundles/status" {
				enginetest.Eventually(t, wait, func() (bool, string) {
					b := read(t, bundles, ns, c.parent)
					return enginetest.Condition(b, "Synced") == "False" && strings.Contains(conditionMessage(b, "Synced"), refusal),
						fmt.Sprintf("Synced %s: %s", enginetest.Condition(b, "Synced"), conditionMessage(b, "Synced"))
				})
			}

			grantRole(t, ns, "default", "right", c.lacks)
			poke(t, ns, c.parent)
			enginetest.Eventually(t, wait, func() (bool, string) { return c.written(t, ns) })
		})
	}
}
