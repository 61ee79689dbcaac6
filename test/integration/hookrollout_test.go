package integration

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/test/enginetest"
)

// rolloutFleet runs the hookrollout.yaml controller as name (policy lines replaced as
// replace says) over n Bundles of two items each, and waits until every child carries the
// hooks' first revision and the controller's status records it as complete.
func rolloutFleet(t *testing.T, name string, n int, replace ...string) (ns string, parents []string) {
	t.Helper()
	controller(t, "hookrollout.yaml", append([]string{"name: hookrollout", "name: " + name,
		"{suite: hookrollout}", "{suite: " + name + "}"}, replace...)...)
	ns = env.Namespace(t)
	for i := range n {
		p := fmt.Sprintf("p%d", i)
		bundle(t, ns, p, name, p, "a=1", "b=2")
		parents = append(parents, ns+"/"+p)
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		by := onRevision(t, ns)
		return len(by["one"]) == n, fmt.Sprintf("parents by revision: %v", by)
	})
	enginetest.Eventually(t, wait, func() (bool, string) {
		st := rolloutOf(t, name)
		return st.Phase == v1alpha1.RolloutComplete && st.Stable != nil, fmt.Sprintf("rollout status %+v", st)
	})
	waitIdle(t, "compositecontroller/"+name)
	return ns, parents
}

// rolloutOf is the CompositeController's status.hookRollout.
func rolloutOf(t *testing.T, name string) v1alpha1.HookRolloutStatus {
	t.Helper()
	return rolloutOfKind(t, "CompositeController", name)
}

// rolloutOfKind is the status.hookRollout of a controller of kind.
func rolloutOfKind(t *testing.T, kind, name string) v1alpha1.HookRolloutStatus {
	t.Helper()
	cc := env.Get(t, "metascript.dev/v1alpha1", kind, "", name)
	raw, _, _ := unstructured.NestedMap(cc.Object, "status", "hookRollout")
	var st v1alpha1.HookRolloutStatus
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err != nil {
		t.Fatal(err)
	}
	if st.Stable == nil || len(st.Stable.Raw) == 0 {
		return st
	}
	st.Stable.Raw = []byte("{...}") // kept, not printed in full
	return st
}

// waitPhase waits until the controller's rollout is in phase, and returns its status.
func waitPhase(t *testing.T, name, phase string) v1alpha1.HookRolloutStatus {
	t.Helper()
	var st v1alpha1.HookRolloutStatus
	enginetest.Eventually(t, wait, func() (bool, string) {
		st = rolloutOf(t, name)
		return st.Phase == phase, fmt.Sprintf("rollout status %+v", st)
	})
	return st
}

// childrenOf lists the ConfigMaps of ns by name: resourceVersion and data.revision.
func childrenOf(t *testing.T, ns string) map[string][2]string {
	t.Helper()
	list, err := env.Kube.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]string{}
	for _, cm := range list.Items {
		if cm.Name == "kube-root-ca.crt" {
			continue
		}
		out[cm.Name] = [2]string{cm.ResourceVersion, cm.Data["revision"]}
	}
	return out
}

// onRevision groups the parents of ns (namespace/name) by the revision all their children
// carry ("mixed" when they differ).
func onRevision(t *testing.T, ns string) map[string][]string {
	t.Helper()
	parentRev := map[string]string{}
	for name, c := range childrenOf(t, ns) {
		p := ns + "/" + name[:strings.LastIndex(name, "-")]
		if was, ok := parentRev[p]; ok && was != c[1] {
			parentRev[p] = "mixed"
			continue
		}
		parentRev[p] = c[1]
	}
	by := map[string][]string{}
	for _, p := range slices.Sorted(maps.Keys(parentRev)) {
		by[parentRev[p]] = append(by[parentRev[p]], p)
	}
	return by
}

// setSync replaces the controller's sync source: the fixture's with its revision and the
// items it keeps changed, or body when it is not empty.
func setSync(t *testing.T, name, revision string, keep int, body string) {
	t.Helper()
	editController(t, name, func(cc *unstructured.Unstructured) {
		src, _, _ := unstructured.NestedString(cc.Object, "spec", "hooks", "sync", "starlark", "source")
		src = strings.Replace(src, `REVISION = "one"`, fmt.Sprintf("REVISION = %q", revision), 1)
		src = strings.Replace(src, "KEEP = 100", fmt.Sprintf("KEEP = %d", keep), 1)
		if body != "" {
			src = body
		}
		if err := unstructured.SetNestedField(cc.Object, src, "spec", "hooks", "sync", "starlark", "source"); err != nil {
			t.Fatal(err)
		}
	})
}

// promote sets the CompositeController's spec.hookRollout.promote to revision.
func promote(t *testing.T, name, revision string) {
	t.Helper()
	editController(t, name, func(cc *unstructured.Unstructured) {
		if err := unstructured.SetNestedField(cc.Object, revision, "spec", "hookRollout", "promote"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestHookRolloutStopsAtTheCanary: an edit whose hook throws reaches the two canary parents
// only; the rollout halts, saying which parent failed and why, and no child of any parent
// changes (each keeps its resourceVersion).
func TestHookRolloutStopsAtTheCanary(t *testing.T) {
	const name = "rollout-canary"
	ns, parents := rolloutFleet(t, name, 10)
	before := childrenOf(t, ns)
	setSync(t, name, "", 0, "def sync(request):\n    fail(\"a typo in the edit\")\n")
	st := waitPhase(t, name, v1alpha1.RolloutHalted)
	if !slices.Contains(st.CanaryParents, st.FailedParent) || !strings.Contains(st.Message, "a typo in the edit") ||
		len(st.CanaryParents) != 2 || st.UpdatedParents != 2 || st.Parents != 10 || st.StableRevision == st.Revision {
		t.Fatalf("halted rollout status does not say where it stands: %+v", st)
	}
	waitIdle(t, "compositecontroller/"+name)
	after := childrenOf(t, ns)
	if !maps.Equal(before, after) {
		t.Fatalf("children changed while the edit halted at the canary:\nbefore %v\nafter  %v", before, after)
	}
	for _, p := range parents {
		failed, canary := len(env.Events(t, ns, strings.TrimPrefix(p, ns+"/"))["HookFailed"]) > 0, slices.Contains(st.CanaryParents, p)
		if failed != canary {
			t.Errorf("parent %s: HookFailed Event %v, canary %v (canaries %v)", p, failed, canary, st.CanaryParents)
		}
	}
}

// TestHookRolloutInSteps: a good edit reaches the canary parents first, then the rest in
// steps; at no moment of the canary step does any other parent run it.
func TestHookRolloutInSteps(t *testing.T) {
	const name = "rollout-steps"
	ns, _ := rolloutFleet(t, name, 10)
	setSync(t, name, "two", 100, "")
	steps := map[int32]int32{} // step → parents updated, as the status said
	deadline := time.Now().Add(2 * wait)
	for {
		// The children first, then the status: the rollout records a step before it moves any
		// parent of it, so children on the edit beyond the canaries under a status still at
		// step 1 are a real breach, not a step that began between the two reads.
		by := onRevision(t, ns)
		st := rolloutOf(t, name)
		if st.Step == 1 && st.Phase == v1alpha1.RolloutProgressing && len(by["two"])+len(by["mixed"]) > 2 {
			t.Fatalf("canary step with %d parents on the edit: %v", len(by["two"])+len(by["mixed"]), by)
		}
		if st.Step > 0 {
			steps[st.Step] = st.UpdatedParents
		}
		if st.Phase == v1alpha1.RolloutComplete && st.StableRevision == st.Revision && len(by["two"]) == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rollout did not complete: status %+v, parents by revision %v", st, by)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// 2 canaries, then 5 more (50% of 10) twice: the last step covers every parent.
	if steps[1] != 2 || steps[2] != 7 || len(steps) != 3 {
		t.Fatalf("steps seen (step → parents updated): %v; want 1→2, 2→7, 3→10", steps)
	}
}

// TestHookRolloutResumesAfterRestart: the engine restarts in the middle of a rollout; the
// new engine, which keeps nothing in memory, runs the same parents on the same revisions and
// the rollout goes on where it was. Promoting the revision then moves every parent.
func TestHookRolloutResumesAfterRestart(t *testing.T) {
	const name = "rollout-restart"
	ns, _ := rolloutFleet(t, name, 10, "pause: 2s", "pause: 1h")
	setSync(t, name, "two", 100, "")
	var st v1alpha1.HookRolloutStatus
	enginetest.Eventually(t, wait, func() (bool, string) {
		st = rolloutOf(t, name)
		by := onRevision(t, ns)
		return st.Step == 1 && slices.Equal(by["two"], slices.Sorted(slices.Values(st.CanaryParents))),
			fmt.Sprintf("status %+v, parents by revision %v", st, by)
	})
	env.RestartEngine(t)
	waitControllerReady(t, "CompositeController", name)
	waitIdle(t, "compositecontroller/"+name)
	again := rolloutOf(t, name)
	by := onRevision(t, ns)
	if again.Step != 1 || again.Cutoff != st.Cutoff || !slices.Equal(again.CanaryParents, st.CanaryParents) ||
		!slices.Equal(by["two"], slices.Sorted(slices.Values(st.CanaryParents))) || len(by["one"]) != 8 {
		t.Fatalf("after the restart: status %+v (before %+v), parents by revision %v", again, st, by)
	}
	promote(t, name, st.Revision)
	enginetest.Eventually(t, wait, func() (bool, string) {
		st := rolloutOf(t, name)
		by := onRevision(t, ns)
		return st.Phase == v1alpha1.RolloutComplete && len(by["two"]) == 10, fmt.Sprintf("status %+v, parents %v", st, by)
	})
}

// TestHookRolloutBoundsDeletes: an edit that would delete a child of every parent is caught
// by maxDeletesPerSync at the canary: nothing is deleted anywhere.
func TestHookRolloutBoundsDeletes(t *testing.T) {
	const name = "rollout-deletes"
	ns, _ := rolloutFleet(t, name, 10, "pause: 2s", "pause: 2s\n    maxDeletesPerSync: 0")
	before := childrenOf(t, ns)
	setSync(t, name, "two", 1, "")
	st := waitPhase(t, name, v1alpha1.RolloutHalted)
	if !strings.Contains(st.Message, "would delete 1 children") {
		t.Fatalf("halt message does not name the bound: %q", st.Message)
	}
	waitIdle(t, "compositecontroller/"+name)
	if after := childrenOf(t, ns); !maps.Equal(before, after) {
		t.Fatalf("children changed although the edit was caught:\nbefore %v\nafter  %v", before, after)
	}
	failed := strings.TrimPrefix(st.FailedParent, ns+"/")
	if len(env.Events(t, ns, failed)["DeleteBoundExceeded"]) == 0 {
		t.Fatalf("no DeleteBoundExceeded Event on %s: %v", failed, env.Events(t, ns, failed))
	}
}

// TestHookRolloutDryRunWritesNothing: with dryRun, an edit is rendered on every parent and
// summed in the controller's status, and the engine writes nothing but that status. Ending
// the dry run rolls the edit out.
func TestHookRolloutDryRunWritesNothing(t *testing.T) {
	const name = "rollout-dryrun"
	ns, _ := rolloutFleet(t, name, 10, "pause: 2s", "pause: 1s\n    dryRun: true")
	before := childrenOf(t, ns)
	env.Requests.Reset()
	setSync(t, name, "three", 1, "")
	var st v1alpha1.HookRolloutStatus
	enginetest.Eventually(t, wait, func() (bool, string) {
		st = rolloutOf(t, name)
		return st.Phase == v1alpha1.RolloutDryRun && st.DryRun != nil && st.DryRun.Parents == 10, fmt.Sprintf("status %+v", st)
	})
	waitIdle(t, "compositecontroller/"+name)
	if d := st.DryRun; d.Creates != 0 || d.Updates != 10 || d.Deletes != 10 || d.Failed != 0 || d.Revision != st.Revision {
		t.Fatalf("dry run summary: %+v; want 10 updates and 10 deletes", *d)
	}
	writes := env.Requests.WritesByResource()
	delete(writes, "compositecontrollers/status") // the summary itself
	if len(writes) != 0 {
		t.Fatalf("the dry run wrote: %v", writes)
	}
	if after := childrenOf(t, ns); !maps.Equal(before, after) {
		t.Fatalf("children changed in a dry run:\nbefore %v\nafter  %v", before, after)
	}
	editController(t, name, func(cc *unstructured.Unstructured) {
		if err := unstructured.SetNestedField(cc.Object, false, "spec", "hookRollout", "dryRun"); err != nil {
			t.Fatal(err)
		}
	})
	enginetest.Eventually(t, 2*wait, func() (bool, string) {
		st := rolloutOf(t, name)
		by := onRevision(t, ns)
		return st.Phase == v1alpha1.RolloutComplete && len(by["three"]) == 10 && len(childrenOf(t, ns)) == 10,
			fmt.Sprintf("status %+v, parents %v", st, by)
	})
}

// TestDecoratorHookRolloutStaged: the same staging for another kind, through the same
// skeleton. A policy added to a running DecoratorController records its hooks as stable; an
// edit of its shared script then decorates the canary target only, until promoted.
func TestDecoratorHookRolloutStaged(t *testing.T) {
	const name = "dec-rollout"
	decorator(t, name, name, "InPlace")
	ns := env.Namespace(t)
	for i := range 6 {
		target(t, ns, fmt.Sprintf("t%d", i), name, true, map[string]any{name: map[string]any{"labels": map[string]any{"x": "1"}}})
	}
	byRevision := func() map[string][]string {
		list, err := env.Client(t, getBundle(t, ns, "t0")).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		by := map[string][]string{}
		for _, b := range list.Items {
			if b.GetLabels()["x"] == "1" {
				rev := cmp.Or(b.GetLabels()["hookrev"], "one")
				by[rev] = append(by[rev], ns+"/"+b.GetName())
			}
		}
		return by
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		by := byRevision()
		return len(by["one"]) == 6, fmt.Sprintf("targets by revision: %v", by)
	})
	editControllerOf(t, "DecoratorController", name, func(dc *unstructured.Unstructured) {
		policy := map[string]any{"canary": int64(1), "pause": "1h"}
		if err := unstructured.SetNestedField(dc.Object, policy, "spec", "hookRollout"); err != nil {
			t.Fatal(err)
		}
	})
	enginetest.Eventually(t, wait, func() (bool, string) {
		st := rolloutOfKind(t, "DecoratorController", name)
		return st.Phase == v1alpha1.RolloutComplete && st.Stable != nil, fmt.Sprintf("rollout status %+v", st)
	})
	editControllerOf(t, "DecoratorController", name, func(dc *unstructured.Unstructured) {
		src, _, _ := unstructured.NestedString(dc.Object, "spec", "script", "starlark", "source")
		src = strings.Replace(src, `labels = dict(d.get("labels", {}))`, `labels = dict(d.get("labels", {})); labels["hookrev"] = "two"`, 1)
		if err := unstructured.SetNestedField(dc.Object, src, "spec", "script", "starlark", "source"); err != nil {
			t.Fatal(err)
		}
	})
	var st v1alpha1.HookRolloutStatus
	enginetest.Eventually(t, wait, func() (bool, string) {
		st = rolloutOfKind(t, "DecoratorController", name)
		by := byRevision()
		return st.Step == 1 && st.SyncedParents == 1 && slices.Equal(by["two"], st.CanaryParents),
			fmt.Sprintf("status %+v, targets by revision %v", st, by)
	})
	waitIdle(t, "decoratorcontroller/"+name)
	if by := byRevision(); len(by["two"]) != 1 || len(by["one"]) != 5 {
		t.Fatalf("the canary step decorated %v with the edit; want only %v", by["two"], st.CanaryParents)
	}
	editControllerOf(t, "DecoratorController", name, func(dc *unstructured.Unstructured) {
		if err := unstructured.SetNestedField(dc.Object, st.Revision, "spec", "hookRollout", "promote"); err != nil {
			t.Fatal(err)
		}
	})
	enginetest.Eventually(t, wait, func() (bool, string) {
		st := rolloutOfKind(t, "DecoratorController", name)
		by := byRevision()
		return st.Phase == v1alpha1.RolloutComplete && len(by["two"]) == 6, fmt.Sprintf("status %+v, targets %v", st, by)
	})
}
