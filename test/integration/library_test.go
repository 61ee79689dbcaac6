package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"metascript.dev/metascript/apis/v1alpha1"

	"metascript.dev/metascript/test/enginetest"
)

// hookLibrary creates testdata/library.yaml as the HookLibrary name whose prefix module holds
// prefix, and deletes it after the test.
func hookLibrary(t *testing.T, name, prefix string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "library.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	data := strings.NewReplacer("NAME", name, "VALUE", prefix).Replace(string(raw))
	out := env.Create(t, "", enginetest.Object(t, data))
	t.Cleanup(func() { env.Delete(t, out) })
	return out
}

// editLibraryModule sets the source of module of the HookLibrary name.
func editLibraryModule(t *testing.T, name, module, source string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := env.Get(t, "metascript.dev/v1alpha1", "HookLibrary", "", name)
		mods, _, _ := unstructured.NestedSlice(cur.Object, "spec", "modules")
		for _, m := range mods {
			if m := m.(map[string]any); m["name"] == module {
				m["starlark"] = source
			}
		}
		_ = unstructured.SetNestedSlice(cur.Object, mods, "spec", "modules")
		_, err := env.Client(t, cur).Update(t.Context(), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLibraryEditResyncsItsUsersOnly: two controllers load one library; an edit of the
// library changes the children of both and calls no hook of a third controller; a broken
// edit is reported on both and changes no child.
func TestLibraryEditResyncsItsUsersOnly(t *testing.T) {
	hookLibrary(t, "bundle-text", "v1:")
	enginetest.Eventually(t, wait, func() (bool, string) {
		lib := env.Get(t, "metascript.dev/v1alpha1", "HookLibrary", "", "bundle-text")
		rev, _, _ := unstructured.NestedString(lib.Object, "status", "revision")
		return enginetest.Condition(lib, "Compiled") == "True" && rev != "", fmt.Sprintf("library status %v", lib.Object["status"])
	})
	for _, n := range []string{"lib-one", "lib-two"} {
		controller(t, "library-bundle.yaml", "NAME", n, "SUITE", n, "LIBRARY", "bundle-text")
		waitControllerReady(t, "CompositeController", n)
	}
	controller(t, "bundle-starlark.yaml")
	waitControllerReady(t, "CompositeController", "bundle-starlark")

	ns := env.Namespace(t)
	bundle(t, ns, "one", "lib-one", "one", "a=1")
	bundle(t, ns, "two", "lib-two", "two", "a=2")
	bundle(t, ns, "plain", "basic", "plain", "a=3")
	waitValue(t, ns, "one-a", "v1:1")
	waitValue(t, ns, "two-a", "v1:2")
	waitValue(t, ns, "plain-a", "3")
	third := "compositecontroller/bundle-starlark"
	waitIdle(t, third)
	thirdCalls := hookCalls(third, "sync", "starlark", "success") + hookCalls(third, "sync", "starlark", "error")
	thirdReconciles := reconciles(third, "success") + reconciles(third, "error")

	editLibraryModule(t, "bundle-text", "prefix", `PREFIX = "v2:"`)
	waitValue(t, ns, "one-a", "v2:1")
	waitValue(t, ns, "two-a", "v2:2")
	waitIdle(t, third)
	if c := hookCalls(third, "sync", "starlark", "success") + hookCalls(third, "sync", "starlark", "error"); c != thirdCalls {
		t.Fatalf("the library edit called the sync hook of a controller that does not load it: %v calls, want %v", c, thirdCalls)
	}
	if r := reconciles(third, "success") + reconciles(third, "error"); r != thirdReconciles {
		t.Fatalf("the library edit reconciled a controller that does not load it: %v, want %v", r, thirdReconciles)
	}

	editLibraryModule(t, "bundle-text", "text", "def decorate(value:\n    return value\n")
	for _, n := range []string{"lib-one", "lib-two"} {
		enginetest.Eventually(t, wait, func() (bool, string) {
			cur := env.Get(t, "metascript.dev/v1alpha1", "CompositeController", "", n)
			msg := conditionMessage(cur, "HooksCompiled")
			return conditionReason(cur, "HooksCompiled") == "LibraryError" && strings.Contains(msg, "lib:bundle-text/text.star:1:"),
				fmt.Sprintf("%s HooksCompiled %s: %s", n, conditionReason(cur, "HooksCompiled"), msg)
		})
		cur := env.Get(t, "metascript.dev/v1alpha1", "CompositeController", "", n)
		if enginetest.Condition(cur, "Ready") != "True" {
			t.Fatalf("%s is not Ready after a broken library edit: %v", n, cur.Object["status"])
		}
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		lib := env.Get(t, "metascript.dev/v1alpha1", "HookLibrary", "", "bundle-text")
		return enginetest.Condition(lib, "Compiled") == "False", fmt.Sprintf("library status %v", lib.Object["status"])
	})
	// The controllers keep running their last good hooks: a parent change still syncs.
	env.Patch(t, getBundle(t, ns, "one"), `{"spec":{"items":[{"name":"a","value":"10"}]}}`)
	waitValue(t, ns, "one-a", "v2:10")
	if v := value(configMap(t, ns, "two-a")); v != "v2:2" {
		t.Fatalf("two-a = %q after a broken library edit, want v2:2", v)
	}
}

// TestLibraryEditRollsOutInSteps: under spec.hookRollout an edit of a library the hooks load
// reaches the canary parents only, as an edit of a hook does. An engine restarted in the
// middle runs the other parents on the library as it was (kept in status.hookRollout.stable,
// not in memory); promoting the revision moves every parent.
func TestLibraryEditRollsOutInSteps(t *testing.T) {
	const name, library = "lib-rollout", "rollout-text"
	hookLibrary(t, library, "v1:")
	controller(t, "library-bundle.yaml", "NAME", name, "SUITE", name, "LIBRARY", library,
		"  hooks:", "  hookRollout: {canary: 2, pause: 1h}\n  hooks:")
	waitControllerReady(t, "CompositeController", name)
	ns := env.Namespace(t)
	const n = 6
	for i := range n {
		bundle(t, ns, fmt.Sprintf("p%d", i), name, "x", fmt.Sprintf("a=%d", i))
	}
	// byPrefix groups the parents (namespace/name) by the prefix of their child's value.
	byPrefix := func() map[string][]string {
		by := map[string][]string{}
		for i := range n {
			v := value(configMap(t, ns, fmt.Sprintf("p%d-a", i)))
			prefix, _, _ := strings.Cut(v, ":")
			by[prefix] = append(by[prefix], fmt.Sprintf("%s/p%d", ns, i))
		}
		return by
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		st := rolloutOf(t, name)
		by := byPrefix()
		return len(by["v1"]) == n && st.Phase == v1alpha1.RolloutComplete && st.Stable != nil,
			fmt.Sprintf("parents by library prefix %v, rollout %+v", by, st)
	})
	first := rolloutOf(t, name).Revision

	editLibraryModule(t, library, "prefix", `PREFIX = "v2:"`)
	var st v1alpha1.HookRolloutStatus
	enginetest.Eventually(t, wait, func() (bool, string) {
		st = rolloutOf(t, name)
		by := byPrefix()
		return st.Step == 1 && st.Revision != first && st.StableRevision == first &&
				slices.Equal(by["v2"], slices.Sorted(slices.Values(st.CanaryParents))) && len(by["v1"]) == n-2,
			fmt.Sprintf("rollout %+v, parents by library prefix %v", st, by)
	})
	env.RestartEngine(t)
	waitControllerReady(t, "CompositeController", name)
	waitIdle(t, "compositecontroller/"+name)
	again, by := rolloutOf(t, name), byPrefix()
	if again.Step != 1 || again.Revision != st.Revision || !slices.Equal(by["v2"], slices.Sorted(slices.Values(st.CanaryParents))) ||
		len(by["v1"]) != n-2 {
		t.Fatalf("after the restart: rollout %+v (before %+v), parents by library prefix %v", again, st, by)
	}
	promote(t, name, st.Revision)
	enginetest.Eventually(t, wait, func() (bool, string) {
		st := rolloutOf(t, name)
		by := byPrefix()
		return st.Phase == v1alpha1.RolloutComplete && len(by["v2"]) == n, fmt.Sprintf("rollout %+v, parents %v", st, by)
	})
}
