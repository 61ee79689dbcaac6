package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/test/enginetest"
)

var controllerRevisions = schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1", Resource: "controllerrevisions"}

// rollingBundle creates a Bundle of suite whose children hold template value v.
// rollingBundle creates a Bundle whose children carry the value v, in one write: created
// without it and patched, its children could be made from the first version and the test
// would start from a rollout.
func rollingBundle(t *testing.T, ns, name, suite, v string) *unstructured.Unstructured {
	t.Helper()
	return env.Create(t, ns, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": bundleAPI, "kind": "Bundle",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"suite": suite}},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"items":    itemList(),
			"template": map[string]any{"value": v},
		},
	}})
}

// setReady sets the Ready condition of Copy ns/name.
func setReady(t *testing.T, ns, name string, ready bool) {
	t.Helper()
	status := "False"
	if ready {
		status = "True"
	}
	_, err := env.Dynamic.Resource(copies).Namespace(ns).Patch(context.Background(), name, types.MergePatchType,
		[]byte(fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":%q}]}}`, status)), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
}

// copyState is "value/note" of a Copy, or "<absent>".
func copyState(t *testing.T, ns, name string) string {
	c := getCopy(t, ns, name)
	if c == nil || c.GetDeletionTimestamp() != nil {
		return "<absent>"
	}
	v, _, _ := unstructured.NestedString(c.Object, "spec", "value")
	n, _, _ := unstructured.NestedString(c.Object, "spec", "note")
	return v + "/" + n
}

func waitCopies(t *testing.T, ns string, want map[string]string) {
	t.Helper()
	enginetest.Eventually(t, wait, func() (bool, string) {
		got := map[string]string{}
		for name := range want {
			got[name] = copyState(t, ns, name)
		}
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("copies %v, want %v", got, want)
	})
}

// checkCopies fails the test unless the Copies are as want now.
func checkCopies(t *testing.T, ns string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for name := range want {
		got[name] = copyState(t, ns, name)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("copies %v, want %v", got, want)
	}
}

func rolledOut(t *testing.T, ns, name string) (status, message string) {
	b := getBundle(t, ns, name)
	return enginetest.Condition(b, "RolledOut"), conditionMessage(b, "RolledOut")
}

func revisionCount(t *testing.T, ns string) int {
	list, err := env.Dynamic.Resource(controllerRevisions).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// TestRollingRecreateOneAtATime: a change under the rolling field paths recreates one child
// at a time, each once the one before is Ready; the old revision is pruned at the end.
func TestRollingRecreateOneAtATime(t *testing.T) {
	controller(t, "rolling.yaml", "NAME", "roll-recreate", "SUITE", "roll-recreate", "METHOD", "RollingRecreate")
	ns := env.Namespace(t)
	b := rollingBundle(t, ns, "r", "roll-recreate", "v1")
	waitCopies(t, ns, map[string]string{"r-0": "v1/", "r-1": "v1/", "r-2": "v1/"})
	for i := range 3 {
		setReady(t, ns, fmt.Sprintf("r-%d", i), true)
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		s, m := rolledOut(t, ns, "r")
		return s == "True", "RolledOut " + s + ": " + m
	})
	uids := map[string]types.UID{}
	for i := range 3 {
		uids[fmt.Sprintf("r-%d", i)] = getCopy(t, ns, fmt.Sprintf("r-%d", i)).GetUID()
	}
	env.Patch(t, b, `{"spec":{"template":{"value":"v2"}}}`)
	for step := range 3 {
		name := fmt.Sprintf("r-%d", step)
		want := map[string]string{}
		for i := range 3 {
			want[fmt.Sprintf("r-%d", i)] = map[bool]string{true: "v2/", false: "v1/"}[i <= step]
		}
		waitCopies(t, ns, want)
		// Paused: the recreated child is not Ready yet, and the next one waits; the last one,
		// with nothing left to roll, is waited for.
		held := "Copy " + name + " holds the rollout"
		if step == 2 {
			held = "3 of 3 children updated; Copy " + name + " is not ready"
		}
		enginetest.Eventually(t, wait, func() (bool, string) {
			s, m := rolledOut(t, ns, "r")
			return s == "False" && strings.Contains(m, held), "RolledOut " + s + ": " + m
		})
		// The reconcile that wrote the condition decided to wait; nothing moves meanwhile.
		waitIdle(t, "compositecontroller/roll-recreate")
		checkCopies(t, ns, want)
		if c := getCopy(t, ns, name); c.GetUID() == uids[name] {
			t.Fatalf("%s was not recreated", name)
		}
		setReady(t, ns, name, true)
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		s, m := rolledOut(t, ns, "r")
		return s == "True" && revisionCount(t, ns) == 1, fmt.Sprintf("RolledOut %s: %s; %d revisions", s, m, revisionCount(t, ns))
	})
}

// TestRollingInPlacePauseResumeAndFieldPaths: an updated child that turns unhealthy pauses
// the rollout until it recovers; a change outside the rolling paths applies at once to the
// children of every revision; a hook failing mid-rollout changes nothing.
func TestRollingInPlacePauseResumeAndFieldPaths(t *testing.T) {
	controller(t, "rolling.yaml", "NAME", "roll-inplace", "SUITE", "roll-inplace", "METHOD", "RollingInPlace")
	ns := env.Namespace(t)
	b := rollingBundle(t, ns, "p", "roll-inplace", "v1")
	waitCopies(t, ns, map[string]string{"p-0": "v1/", "p-1": "v1/", "p-2": "v1/"})
	setReady(t, ns, "p-0", false) // an old child failing does not matter; once updated it holds
	setReady(t, ns, "p-1", true)
	setReady(t, ns, "p-2", true)
	env.Patch(t, b, `{"spec":{"template":{"value":"v2"}}}`)
	waitCopies(t, ns, map[string]string{"p-0": "v2/", "p-1": "v1/", "p-2": "v1/"})
	enginetest.Eventually(t, wait, func() (bool, string) {
		s, m := rolledOut(t, ns, "p")
		return s == "False" && strings.Contains(m, "Copy p-0 holds the rollout: condition Ready is False (want True)"), "RolledOut " + s + ": " + m
	})
	// Outside the rolling paths: at once, to every revision's children.
	env.Patch(t, b, `{"spec":{"note":"now"}}`)
	waitCopies(t, ns, map[string]string{"p-0": "v2/now", "p-1": "v1/now", "p-2": "v1/now"})
	// A failing hook mid-rollout changes nothing, however long it fails, even once the child
	// that held the rollout is Ready.
	const ctl = "compositecontroller/roll-inplace"
	failedAfter(t, ctl, func() { env.Patch(t, b, `{"spec":{"fail":true}}`) })
	failedAfter(t, ctl, func() { setReady(t, ns, "p-0", true) })
	checkCopies(t, ns, map[string]string{"p-0": "v2/now", "p-1": "v1/now", "p-2": "v1/now"})
	env.Patch(t, b, `{"spec":{"fail":null}}`)
	waitCopies(t, ns, map[string]string{"p-0": "v2/now", "p-1": "v2/now", "p-2": "v2/now"})
	enginetest.Eventually(t, wait, func() (bool, string) {
		s, m := rolledOut(t, ns, "p")
		return s == "True" && revisionCount(t, ns) == 1, fmt.Sprintf("RolledOut %s: %s; %d revisions", s, m, revisionCount(t, ns))
	})
	// Scaling uses the newest revision.
	env.Patch(t, b, `{"spec":{"replicas":4}}`)
	waitCopies(t, ns, map[string]string{"p-0": "v2/now", "p-1": "v2/now", "p-2": "v2/now", "p-3": "v2/now"})
}

// TestRollingWithGeneratedSelector: rolling updates of a controller that generates its
// children's selector.
func TestRollingWithGeneratedSelector(t *testing.T) {
	controller(t, "rolling-generated.yaml")
	ns := env.Namespace(t)
	b := env.Create(t, ns, enginetest.Object(t, `
apiVersion: test.metascript.dev/v1
kind: Bundle
metadata: {name: g, labels: {suite: roll-generated}}
spec: {template: {value: v1}}`))
	waitCopies(t, ns, map[string]string{"g-0": "v1/", "g-1": "v1/"})
	env.Patch(t, b, `{"spec":{"template":{"value":"v2"}}}`)
	waitCopies(t, ns, map[string]string{"g-0": "v2/", "g-1": "v1/"}) // g-0 has no Ready yet: paused
	setReady(t, ns, "g-0", true)
	waitCopies(t, ns, map[string]string{"g-0": "v2/", "g-1": "v2/"})
	if l := getCopy(t, ns, "g-1").GetLabels()["metascript.dev/controller-uid"]; l != string(b.GetUID()) {
		t.Fatalf("generated selector label %q, want the parent's UID", l)
	}
}

// revisionNumbers maps each ControllerRevision in ns to its revision number.
func revisionNumbers(t *testing.T, ns string) map[string]int64 {
	t.Helper()
	list, err := env.Dynamic.Resource(controllerRevisions).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, r := range list.Items {
		n, _, _ := unstructured.NestedInt64(r.Object, "revision")
		out[r.GetName()] = n
	}
	return out
}

// TestRollingRollback: setting the rolling fields back to an earlier revision's values makes
// that revision the newest again (a rollback) instead of making a third one; a child already
// moved rolls back under the same status checks, and at the end only the earlier revision,
// numbered newest, is left.
func TestRollingRollback(t *testing.T) {
	controller(t, "rolling.yaml", "NAME", "roll-back", "SUITE", "roll-back", "METHOD", "RollingInPlace")
	ns := env.Namespace(t)
	b := rollingBundle(t, ns, "p", "roll-back", "v1")
	waitCopies(t, ns, map[string]string{"p-0": "v1/", "p-1": "v1/", "p-2": "v1/"})
	for i := range 3 {
		setReady(t, ns, fmt.Sprintf("p-%d", i), true)
	}
	var v1 map[string]int64
	enginetest.Eventually(t, wait, func() (bool, string) {
		s, m := rolledOut(t, ns, "p")
		v1 = revisionNumbers(t, ns)
		return s == "True" && len(v1) == 1, fmt.Sprintf("RolledOut %s: %s; revisions %v", s, m, v1)
	})
	var v1Name string
	for name := range v1 {
		v1Name = name
	}
	// Roll forward to v2 and hold it at its first child.
	setReady(t, ns, "p-0", false)
	env.Patch(t, b, `{"spec":{"template":{"value":"v2"}}}`)
	waitCopies(t, ns, map[string]string{"p-0": "v2/", "p-1": "v1/", "p-2": "v1/"})
	enginetest.Eventually(t, wait, func() (bool, string) {
		s, m := rolledOut(t, ns, "p")
		return s == "False" && strings.Contains(m, "Copy p-0 holds the rollout"), "RolledOut " + s + ": " + m
	})
	both := revisionNumbers(t, ns)
	var v2Name string
	for name := range both {
		if name != v1Name {
			v2Name = name
		}
	}
	if len(both) != 2 || both[v2Name] <= both[v1Name] {
		t.Fatalf("revisions %v mid-rollout, want %s and a newer one", both, v1Name)
	}
	// Roll back: v1 is the newest again; p-1 and p-2 pass their checks, so p-0 moves back.
	env.Patch(t, b, `{"spec":{"template":{"value":"v1"}}}`)
	waitCopies(t, ns, map[string]string{"p-0": "v1/", "p-1": "v1/", "p-2": "v1/"})
	setReady(t, ns, "p-0", true)
	enginetest.Eventually(t, wait, func() (bool, string) {
		s, m := rolledOut(t, ns, "p")
		left := revisionNumbers(t, ns)
		return s == "True" && strings.Contains(m, v1Name) && len(left) == 1 && left[v1Name] > both[v2Name],
			fmt.Sprintf("RolledOut %s: %s; revisions %v, want only %s, numbered above %s's %d", s, m, left, v1Name, v2Name, both[v2Name])
	})
}

// TestRollingScaleDownOneDownAtATime: a scale-down during a rollout waits while another
// child holds the rollout, and children leave one at a time once every child is ready: at no
// moment are two children down (absent, being deleted or not Ready).
func TestRollingScaleDownOneDownAtATime(t *testing.T) {
	controller(t, "rolling.yaml", "NAME", "roll-scale", "SUITE", "roll-scale", "METHOD", "RollingRecreate")
	ns := env.Namespace(t)
	b := rollingBundle(t, ns, "s", "roll-scale", "v1")
	names := []string{"s-0", "s-1", "s-2"}
	waitCopies(t, ns, map[string]string{"s-0": "v1/", "s-1": "v1/", "s-2": "v1/"})
	for _, n := range names {
		setReady(t, ns, n, true)
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		s, m := rolledOut(t, ns, "s")
		return s == "True", "RolledOut " + s + ": " + m
	})
	// Watch, until the test ends, how many children are down at once.
	down := func() int { // off the test's goroutine: no t here
		n := 0
		for _, name := range names {
			c, err := env.Dynamic.Resource(copies).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil || c.GetDeletionTimestamp() != nil || enginetest.Condition(c, "Ready") != "True" {
				n++
			}
		}
		return n
	}
	worst := make(chan int, 1)
	stop := make(chan struct{})
	stopWatching := sync.OnceFunc(func() { close(stop) })
	t.Cleanup(stopWatching) // a failure below ends the test before the end of the watch
	go func() {
		w := 0
		for {
			select {
			case <-stop:
				worst <- w
				return
			case <-time.After(10 * time.Millisecond):
			}
			w = max(w, down())
		}
	}()

	env.Patch(t, b, `{"spec":{"template":{"value":"v2"}}}`)
	waitCopies(t, ns, map[string]string{"s-0": "v2/", "s-1": "v1/", "s-2": "v1/"})
	env.Patch(t, b, `{"spec":{"replicas":2}}`) // s-0 holds the rollout: s-2 stays for now
	enginetest.Eventually(t, wait, func() (bool, string) {
		_, m := rolledOut(t, ns, "s")
		return strings.Contains(m, "1 child(ren) the hook no longer returns wait"), "RolledOut: " + m
	})
	waitIdle(t, "compositecontroller/roll-scale")
	checkCopies(t, ns, map[string]string{"s-0": "v2/", "s-1": "v1/", "s-2": "v1/"})
	setReady(t, ns, "s-0", true)
	waitCopies(t, ns, map[string]string{"s-0": "v2/", "s-1": "v2/", "s-2": "v1/"})
	waitIdle(t, "compositecontroller/roll-scale")
	checkCopies(t, ns, map[string]string{"s-0": "v2/", "s-1": "v2/", "s-2": "v1/"}) // s-1 is down: s-2 still waits
	setReady(t, ns, "s-1", true)
	waitCopies(t, ns, map[string]string{"s-0": "v2/", "s-1": "v2/", "s-2": "<absent>"})
	stopWatching()
	if w := <-worst; w > 1 {
		t.Fatalf("%d children were down at once, want at most 1", w)
	}
}

// TestRollingClusterScopedParent: a cluster-scoped parent's children roll one at a time like
// a namespaced parent's; its revisions live in the engine's revision namespace, owned by it.
func TestRollingClusterScopedParent(t *testing.T) {
	controller(t, "rolling-cluster.yaml")
	ns := env.Namespace(t)
	name := "rc-" + ns
	p := env.Create(t, "", &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": bundleAPI, "kind": "ClusterBundle",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"suite": "roll-cluster"}},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"namespace": ns, "template": map[string]any{"value": "v1"}},
	}})
	t.Cleanup(func() { env.Delete(t, p) })
	c0, c1 := name+"-0", name+"-1"
	waitCopies(t, ns, map[string]string{c0: "v1/", c1: "v1/"})
	setReady(t, ns, c0, true)
	setReady(t, ns, c1, true)
	rolled := func() (string, string) {
		cur := env.Get(t, bundleAPI, "ClusterBundle", "", name)
		return enginetest.Condition(cur, "RolledOut"), conditionMessage(cur, "RolledOut")
	}
	enginetest.Eventually(t, wait, func() (bool, string) { s, m := rolled(); return s == "True", "RolledOut " + s + ": " + m })

	env.Patch(t, p, `{"spec":{"template":{"value":"v2"}}}`)
	waitCopies(t, ns, map[string]string{c0: "v2/", c1: "v1/"})
	waitIdle(t, "compositecontroller/roll-cluster")
	checkCopies(t, ns, map[string]string{c0: "v2/", c1: "v1/"}) // c0 is not Ready: c1 waits
	setReady(t, ns, c0, true)
	waitCopies(t, ns, map[string]string{c0: "v2/", c1: "v2/"})
	setReady(t, ns, c1, true)
	enginetest.Eventually(t, wait, func() (bool, string) { s, m := rolled(); return s == "True", "RolledOut " + s + ": " + m })

	list, err := env.Dynamic.Resource(controllerRevisions).Namespace("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned := 0
	for _, r := range list.Items {
		for _, o := range r.GetOwnerReferences() {
			if o.UID == p.GetUID() && o.Kind == "ClusterBundle" {
				owned++
			}
		}
	}
	if owned != 1 {
		t.Fatalf("%d revisions in the revision namespace owned by the ClusterBundle after the rollout, want 1", owned)
	}
}
