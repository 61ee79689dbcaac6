package snapshotschedule

import (
	"context"
	"fmt"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
