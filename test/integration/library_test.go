package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

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
