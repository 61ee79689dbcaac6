package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/engine/composite"
	"metascript.dev/metascript/engine/order"
	"metascript.dev/metascript/test/enginetest"
)

// finalizeHook is testdata/order.yaml's finalize hook.
const finalizeHook = "finalize: {starlark: {function: finalize}}"

// holdFinalizer keeps a child the test wants to see being deleted, but not gone.
const holdFinalizer = "test.metascript.dev/hold"

// orderChild is child <bundle>-<part> of testdata/order.yaml: base and top are ConfigMaps,
// mid a Copy; nil when absent.
func orderChild(t *testing.T, ns, bundle, part string) *unstructured.Unstructured {
	if part == "mid" {
		return env.Get(t, bundleAPI, "Copy", ns, bundle+"-"+part)
	}
	return configMap(t, ns, bundle+"-"+part)
}

// state is how a child of testdata/order.yaml stands: absent, deleting or present.
func state(obj *unstructured.Unstructured) string {
	switch {
	case obj == nil:
		return "absent"
	case obj.GetDeletionTimestamp() != nil:
		return "deleting"
	}
	return "present"
}

// waitStates waits until base, mid and top stand as want says.
func waitStates(t *testing.T, ns, bundle string, want ...string) {
	t.Helper()
	enginetest.Eventually(t, wait, func() (bool, string) {
		var got []string
		for _, part := range []string{"base", "mid", "top"} {
			got = append(got, state(orderChild(t, ns, bundle, part)))
		}
		return slices.Equal(got, want), fmt.Sprintf("base, mid, top are %v; want %v", got, want)
	})
}

// setHold adds or removes holdFinalizer on a child.
func setHold(t *testing.T, ns, bundle, part string, hold bool) {
	t.Helper()
	obj := orderChild(t, ns, bundle, part)
	if obj == nil {
		t.Fatalf("%s-%s is gone", bundle, part)
	}
	finalizers := []string{}
	if hold {
		finalizers = []string{holdFinalizer}
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizers}})
	env.Patch(t, obj, string(patch))
}

// waitWaiting waits until the bundle's ChildrenWaiting condition has status and a message
// containing each of parts.
func waitWaiting(t *testing.T, ns, bundle, status string, parts ...string) {
	t.Helper()
	enginetest.Eventually(t, wait, func() (bool, string) {
		p := getBundle(t, ns, bundle)
		list, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
		for _, c := range list {
			m, _ := c.(map[string]any)
			if m["type"] != composite.ChildrenWaitingCondition {
				continue
			}
			msg, _ := m["message"].(string)
			ok := m["status"] == status
			for _, part := range parts {
				ok = ok && strings.Contains(msg, part)
			}
			return ok, fmt.Sprintf("ChildrenWaiting %v: %s; want %s with %q", m["status"], msg, status, parts)
		}
		return false, fmt.Sprintf("no ChildrenWaiting condition: %v", p.Object["status"])
	})
}

// createInOrder creates bundle name and brings it to all three children, checking the
// waves on the way.
func createInOrder(t *testing.T, ctl, ns, name string) *unstructured.Unstructured {
	t.Helper()
	b := env.Create(t, ns, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": bundleAPI, "kind": "Bundle",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"suite": ctl}},
		"spec":     map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": name}}},
	}})
	// base, then mid once base exists; top waits for mid to be Ready.
	waitStates(t, ns, name, "present", "present", "absent")
	waitWaiting(t, ns, name, "True", fmt.Sprintf("ConfigMap %s/%s-top waits for Copy %s/%s-mid (it has no condition Ready)", ns, name, ns, name))
	waitIdle(t, "compositecontroller/"+ctl)
	if state(orderChild(t, ns, name, "top")) != "absent" {
		t.Fatal("top was created before mid was Ready")
	}
	mid := orderChild(t, ns, name, "mid")
	if got := order.AfterOf(mid); len(got) != 1 || got[0].Name != name+"-base" {
		t.Errorf("mid records that it waits for %v, want the base", got)
	}
	setReady(t, ns, name+"-mid", true)
	waitStates(t, ns, name, "present", "present", "present")
	waitWaiting(t, ns, name, "False")
	return b
}

// tearDownInReverse holds top and mid with a finalizer of the test, runs remove (which makes
// the engine delete every child), and checks that each child is deleted only once the one
// that waits for it is gone.
func tearDownInReverse(t *testing.T, ctl, ns, name string, remove func()) {
	t.Helper()
	setHold(t, ns, name, "top", true)
	setHold(t, ns, name, "mid", true)
	remove()
	waitStates(t, ns, name, "present", "present", "deleting")
	waitWaiting(t, ns, name, "True", fmt.Sprintf("Copy %s/%s-mid is deleted once ConfigMap %s/%s-top is gone", ns, name, ns, name))
	waitIdle(t, "compositecontroller/"+ctl)
	if s := state(orderChild(t, ns, name, "mid")); s != "present" {
		t.Fatalf("mid is %s while top, which waits for it, remains", s)
	}
	setHold(t, ns, name, "top", false)
	waitStates(t, ns, name, "present", "deleting", "absent")
	waitIdle(t, "compositecontroller/"+ctl)
	if s := state(orderChild(t, ns, name, "base")); s != "present" {
		t.Fatalf("base is %s while mid, which waits for it, remains", s)
	}
	setHold(t, ns, name, "mid", false)
	waitStates(t, ns, name, "absent", "absent", "absent")
}

// TestChildrenInDependencyOrder: children are created in waves as what they wait for becomes
// ready, and deleted in reverse, when the hook drops them and when the parent is finalized.
func TestChildrenInDependencyOrder(t *testing.T) {
	controller(t, "order.yaml", "NAME", "order", "FINALIZE", finalizeHook)
	ns := env.Namespace(t)

	t.Run("dropped by sync", func(t *testing.T) {
		b := createInOrder(t, "order", ns, "drop")
		tearDownInReverse(t, "order", ns, "drop", func() { env.Patch(t, b, `{"spec":{"off":true}}`) })
		waitWaiting(t, ns, "drop", "False")
	})

	t.Run("finalized", func(t *testing.T) {
		b := createInOrder(t, "order", ns, "fin")
		tearDownInReverse(t, "order", ns, "fin", func() {
			env.Delete(t, b)
			// The finalize hook answered finalized, but the engine is not done deleting.
			waitStates(t, ns, "fin", "present", "present", "deleting")
			if p := getBundle(t, ns, "fin"); p == nil || len(p.GetFinalizers()) == 0 {
				t.Fatal("the parent lost its finalizer while its children were still being deleted in order")
			}
		})
		enginetest.Eventually(t, wait, func() (bool, string) {
			p := getBundle(t, ns, "fin")
			return p == nil, fmt.Sprintf("parent still there: %v", p)
		})
	})
}

// TestOrderedTeardownWithoutFinalizeHook: a parent whose children record an order holds the
// engine's finalizer without a finalize hook, and when it is deleted the engine deletes the
// children that wait for others itself, each once what waits for it is gone, before the
// parent goes; the child nothing waits on last is left to the garbage collector, which runs
// only after the parent is gone (none runs here: it stays).
func TestOrderedTeardownWithoutFinalizeHook(t *testing.T) {
	controller(t, "order.yaml", "NAME", "order-gc", "FINALIZE", "")
	ns := env.Namespace(t)
	b := createInOrder(t, "order-gc", ns, "gc")
	if p := getBundle(t, ns, "gc"); !slices.Contains(p.GetFinalizers(), composite.FinalizerPrefix+"order-gc") {
		t.Fatalf("finalizers %v: the parent of ordered children does not hold the engine's finalizer", p.GetFinalizers())
	}
	setHold(t, ns, "gc", "top", true)
	env.Delete(t, b)
	waitStates(t, ns, "gc", "present", "present", "deleting")
	waitWaiting(t, ns, "gc", "True", fmt.Sprintf("Copy %s/gc-mid is deleted once ConfigMap %s/gc-top is gone", ns, ns))
	waitIdle(t, "compositecontroller/order-gc")
	if s := state(orderChild(t, ns, "gc", "mid")); s != "present" {
		t.Fatalf("mid is %s while top, which waits for it, remains", s)
	}
	setHold(t, ns, "gc", "top", false)
	waitStates(t, ns, "gc", "present", "absent", "absent")
	enginetest.Eventually(t, wait, func() (bool, string) {
		p := getBundle(t, ns, "gc")
		return p == nil, fmt.Sprintf("parent still there: %v", p)
	})
	if s := state(orderChild(t, ns, "gc", "base")); s != "present" {
		t.Fatalf("base is %s: the engine deleted what the garbage collector is left", s)
	}
}

// TestOrderCycleRefused: an order with a cycle is an invalid answer naming its members, and
// nothing is written.
func TestOrderCycleRefused(t *testing.T) {
	controller(t, "order.yaml", "NAME", "order", "FINALIZE", finalizeHook)
	ns := env.Namespace(t)
	failedAfter(t, "compositecontroller/order", func() {
		env.Create(t, ns, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": bundleAPI, "kind": "Bundle",
			"metadata": map[string]any{"name": "cyc", "namespace": ns, "labels": map[string]any{"suite": "order"}},
			"spec":     map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "cyc"}}, "cycle": true},
		}})
	})
	want := fmt.Sprintf("a cycle: Copy %[1]s/cyc-mid waits for ConfigMap %[1]s/cyc-base waits for ConfigMap %[1]s/cyc-top waits for Copy %[1]s/cyc-mid", ns)
	env.WaitEvent(t, wait, ns, "cyc", "InvalidHookResponse", want)
	for _, part := range []string{"base", "mid", "top"} {
		if obj := orderChild(t, ns, "cyc", part); obj != nil {
			t.Errorf("cyc-%s was written for an invalid answer", part)
		}
	}
	if p := getBundle(t, ns, "cyc"); p.Object["status"] != nil {
		t.Errorf("the parent's status was written for an invalid answer: %v", p.Object["status"])
	}
}
