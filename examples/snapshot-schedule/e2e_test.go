package snapshotschedule

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/test/enginetest"
)

// The e2e tests run the engine in-process against a real kube-apiserver and etcd with the
// example's CRDs installed.

var env *enginetest.Env

func TestMain(m *testing.M) {
	var err error
	env, err = enginetest.Start(enginetest.Options{CRDDirs: []string{"crd.yaml"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

const exampleAPI = "examples.metascript.dev/v1alpha1"

// languages are the two implementations of the controller.
var languages = []struct {
	name string
	lang scripting.Language
	file string
}{
	{"starlark", scripting.Starlark, "controller-starlark.yaml"},
	{"javascript", scripting.JavaScript, "controller-javascript.yaml"},
}

// timeProbes name the type of the time module, the one stdlib module the hooks use.
var timeProbes = map[scripting.Language]string{
	scripting.Starlark:   "def probe(request):\n    return type(time)\n",
	scripting.JavaScript: "function probe(request) { return typeof time; }",
}

// missingSupport says what rt lacks to run the controllers in lang, or "" when nothing.
func missingSupport(rt *scripting.Runtime, lang scripting.Language) string {
	prog, err := rt.Compile(lang, "probe", timeProbes[lang])
	if errors.Is(err, scripting.ErrUnknownLanguage) {
		return fmt.Sprintf("the engine has no %s adapter: %v", lang, err)
	}
	if err != nil {
		return fmt.Sprintf("the %s adapter does not predeclare the time module: %v", lang, err)
	}
	out, err := prog.Call(context.Background(), scripting.Invocation{Function: "probe", Request: map[string]any{}})
	if err != nil || out == "undefined" {
		return fmt.Sprintf("the %s adapter does not offer the time module: %v %v", lang, out, err)
	}
	return ""
}

// TestScheduleValidation: the API server refuses durations the hooks could not parse
// (time.parse_duration takes Go durations, no days), intervals under a second, and a TTL
// shorter than the interval.
func TestScheduleValidation(t *testing.T) {
	ns := env.Namespace(t)
	for _, tc := range []struct {
		interval, ttl string
		ok            bool
	}{
		{"6h", "240h", true},
		{"90m", "90m", true},
		{"10d", "240h", false},
		{"6h", "10d", false},
		{"500ms", "1h", false},
		{"6h", "1h", false},
	} {
		obj := enginetest.Object(t, fmt.Sprintf(`
apiVersion: examples.metascript.dev/v1alpha1
kind: SnapshotSchedule
metadata: {generateName: v-}
spec: {snapshotInterval: %q, snapshotTTL: %q}
`, tc.interval, tc.ttl))
		obj.SetNamespace(ns)
		_, err := env.Client(t, obj).Create(context.Background(), obj, metav1.CreateOptions{})
		if (err == nil) != tc.ok {
			t.Errorf("interval %s, TTL %s: accepted %v, want %v (%v)", tc.interval, tc.ttl, err == nil, tc.ok, err)
		}
	}
}
