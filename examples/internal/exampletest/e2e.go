// Package exampletest is what the examples' tests share: installing a
// controller of each language on the in-process engine (test/enginetest), waiting for the
// engine to settle, and the offline hook harness that compares both languages with golden
// files. Each example keeps its scenarios; only the machinery lives here.
package exampletest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/test/enginetest"
)

// Wait bounds every poll of the examples' e2e tests.
const Wait = 30 * time.Second

// Language is one implementation of an example's controller.
type Language struct {
	Name string
	Lang scripting.Language
	File string
}

// Languages are the two implementations every example ships; each scenario runs on both.
var Languages = []Language{
	{"starlark", scripting.Starlark, "controller-starlark.yaml"},
	{"javascript", scripting.JavaScript, "controller-javascript.yaml"},
}

// RequireSupport fails the test unless rt runs hooks in lang that use the stdlib modules
// named, as predeclared globals. A missing adapter or module is a regression of the engine,
// never a reason to skip: every example ships in both languages.
func RequireSupport(t testing.TB, rt *scripting.Runtime, lang scripting.Language, modules ...string) {
	t.Helper()
	if reason := missingSupport(rt, lang, modules...); reason != "" {
		t.Fatal(reason)
	}
}

// missingSupport says what rt lacks to run hooks in lang that use the stdlib modules named;
// "" when nothing.
func missingSupport(rt *scripting.Runtime, lang scripting.Language, modules ...string) string {
	var src string
	switch lang {
	case scripting.Starlark:
		src = "def probe(request):\n    return [type(m) for m in [" + strings.Join(modules, ", ") + "]]\n"
	default:
		src = "function probe(request) { return [" + strings.Join(modules, ", ") + "].map(function (m) { return typeof m; }); }"
	}
	prog, err := rt.Compile(lang, "probe", src)
	if errors.Is(err, scripting.ErrUnknownLanguage) {
		return fmt.Sprintf("the engine has no %s adapter: %v", lang, err)
	}
	if err != nil {
		return fmt.Sprintf("the %s adapter does not predeclare the stdlib modules %v: %v", lang, modules, err)
	}
	out, err := prog.Call(context.Background(), scripting.Invocation{Function: "probe", Request: map[string]any{}})
	if err != nil {
		return fmt.Sprintf("probing the %s adapter's stdlib: %v", lang, err)
	}
	types, ok := out.([]any)
	if !ok || len(types) != len(modules) {
		return fmt.Sprintf("probing the %s adapter's stdlib %v: got %v", lang, modules, out)
	}
	for _, typ := range types {
		if typ == "undefined" {
			return fmt.Sprintf("the %s adapter does not predeclare the stdlib modules %v (types: %v)", lang, modules, out)
		}
	}
	return ""
}

// InstallController creates the controller resource of file (its first document) and waits
// until it runs. On cleanup it deletes it and waits until no runner is left, so that the next
// test may install one of the same name (same finalizer, same field manager). Register it
// before creating parents or targets: cleanups run last-in first-out, and they must go while
// their finalize hook can still run.
func InstallController(t *testing.T, env *enginetest.Env, file string) *unstructured.Unstructured {
	t.Helper()
	dc := env.Create(t, "", enginetest.ObjectsFromFile(t, file)[0])
	t.Cleanup(func() {
		env.Delete(t, dc)
		enginetest.Eventually(t, Wait, func() (bool, string) {
			n := gauge(t, env.Engine.Metrics.Controllers.WithLabelValues("running"))
			return env.Get(t, dc.GetAPIVersion(), dc.GetKind(), "", dc.GetName()) == nil && n == 0,
				fmt.Sprintf("controller still present or %v runners running", n)
		})
	})
	enginetest.Eventually(t, Wait, func() (bool, string) {
		cur := env.Get(t, dc.GetAPIVersion(), dc.GetKind(), "", dc.GetName())
		g, _, _ := unstructured.NestedInt64(cur.Object, "status", "observedGeneration")
		return g == cur.GetGeneration() && enginetest.Condition(cur, "HooksCompiled") == "True" &&
				enginetest.Condition(cur, "Ready") == "True",
			fmt.Sprintf("controller status = %v", cur.Object["status"])
	})
	return dc
}

// Settle runs touch, which must make the decorator name reconcile a target, and waits until
// a reconcile has succeeded since and the work queue is empty.
func Settle(t *testing.T, env *enginetest.Env, name string, touch func()) {
	t.Helper()
	ctl := "decoratorcontroller/" + name
	before := counter(t, env.Engine.Metrics.Reconciles.WithLabelValues(ctl, "success"))
	touch()
	enginetest.Eventually(t, Wait, func() (bool, string) {
		n := counter(t, env.Engine.Metrics.Reconciles.WithLabelValues(ctl, "success"))
		depth := env.Engine.Metrics.QueueDepth(ctl)
		return n > before && depth == 0, fmt.Sprintf("reconciles %v → %v, queue depth %v", before, n, depth)
	})
}

// WaitEvent waits for an Event of reason about the object named name, recorded in ns, whose
// message contains text.
func WaitEvent(t *testing.T, env *enginetest.Env, ns, name, reason, text string) {
	t.Helper()
	env.WaitEvent(t, Wait, ns, name, reason, text)
}

// Warnings lists the Warning Events about objects of kind named name in ns.
func Warnings(t *testing.T, env *enginetest.Env, ns, kind, name string) []string {
	t.Helper()
	list, err := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=" + kind + ",involvedObject.name=" + name + ",type=Warning",
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}

// ControlledBy reports whether obj's controller reference is owner, and names the decorator
// in the engine's mark annotation.
func ControlledBy(obj, owner *unstructured.Unstructured, decorator string) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == owner.GetUID() &&
		obj.GetAnnotations()["metascript.dev/decorator-controller"] == decorator
}

type writer interface{ Write(*dto.Metric) error }

// counter reads a Prometheus counter.
func counter(t *testing.T, c any) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.(writer).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// gauge reads a Prometheus gauge.
func gauge(t *testing.T, g any) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.(writer).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}
