package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/test/controlplane"
)

var (
	bundles     = schema.GroupVersionResource{Group: "test.metascript.dev", Version: "v1", Resource: "bundles"}
	copies      = schema.GroupVersionResource{Group: "test.metascript.dev", Version: "v1", Resource: "copies"}
	composites  = schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1", Resource: "compositecontrollers"}
	namespaces  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	testdataDir = filepath.Join("..", "integration", "testdata")
)

// TestRollingSurvivesSIGKILL: the engine is killed (SIGKILL) in the middle of a
// RollingRecreate rollout and started again. The rollout resumes where it was: a child
// already recreated is not recreated again, a child not yet reached is not skipped, and the
// rollout still waits for each recreated child to be Ready.
func TestRollingSurvivesSIGKILL(t *testing.T) {
	root, dir, bin := buildEngine(t)
	cp, err := controlplane.Start(controlplane.Options{CRDDirs: []string{
		filepath.Join(root, "manifests", "crds"), filepath.Join(testdataDir, "crds")}})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	kubeconfig, err := cp.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	c := dynamic.NewForConfigOrDie(cp.Config)
	ctx := context.Background()

	var logs bytes.Buffer
	var engine *exec.Cmd
	start := func() {
		// One engine, killed and restarted: restart safety is what this test is about, not the
		// wait for a killed leader's Lease to expire.
		engine = exec.Command(bin, "run", "--kubeconfig", kc, "--metrics-addr", freePort(t), "--health-addr", freePort(t), "--leader-elect=false")
		engine.Stdout, engine.Stderr = &logs, &logs
		if err := engine.Start(); err != nil {
			t.Fatal(err)
		}
	}
	kill := func() {
		_ = engine.Process.Kill() // SIGKILL: no shutdown at all
		_ = engine.Wait()
	}
	start()
	defer func() { kill() }()

	data, err := os.ReadFile(filepath.Join(testdataDir, "rolling.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("NAME", "roll", "SUITE", "roll", "METHOD", "RollingRecreate").Replace(string(data))
	cc := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(text), &cc.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resource(composites).Create(ctx, cc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "roll"}}}
	if _, err := c.Resource(namespaces).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.metascript.dev/v1", "kind": "Bundle",
		"metadata": map[string]any{"name": "r", "labels": map[string]any{"suite": "roll"}},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "r"}},
			"replicas": int64(4), "template": map[string]any{"value": "v1"}},
	}}
	if _, err := c.Resource(bundles).Namespace("roll").Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	state := func() map[string]string {
		out := map[string]string{}
		for i := range 4 {
			name := fmt.Sprintf("r-%d", i)
			o, err := c.Resource(copies).Namespace("roll").Get(ctx, name, metav1.GetOptions{})
			if err != nil || o.GetDeletionTimestamp() != nil {
				out[name] = "<absent>"
				continue
			}
			v, _, _ := unstructured.NestedString(o.Object, "spec", "value")
			out[name] = v + "@" + string(o.GetUID())[:8]
		}
		return out
	}
	value := func(s string) string { v, _, _ := strings.Cut(s, "@"); return v }
	waitFor := func(what string, cond func(map[string]string) bool) map[string]string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			s := state()
			if cond(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: copies %v; engine log:\n%s", what, s, logs.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	ready := func(name string) {
		t.Helper()
		_, err := c.Resource(copies).Namespace("roll").Patch(ctx, name, types.MergePatchType,
			[]byte(`{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatal(err)
		}
	}
	values := func(want ...string) func(map[string]string) bool {
		return func(s map[string]string) bool {
			for i, w := range want {
				if value(s[fmt.Sprintf("r-%d", i)]) != w {
					return false
				}
			}
			return true
		}
	}
	waitFor("first convergence", values("v1", "v1", "v1", "v1"))
	for i := range 4 {
		ready(fmt.Sprintf("r-%d", i))
	}
	time.Sleep(time.Second)
	if _, err := c.Resource(bundles).Namespace("roll").Patch(ctx, "r", types.MergePatchType,
		[]byte(`{"spec":{"template":{"value":"v2"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// r-0 is recreated and becomes Ready; r-1 is recreated and waits to be Ready.
	s := waitFor("r-0 recreated", values("v2", "v1", "v1", "v1"))
	ready("r-0")
	s = waitFor("r-1 recreated", values("v2", "v2", "v1", "v1"))
	time.Sleep(500 * time.Millisecond)

	kill()
	before := state()
	if fmt.Sprint(before) != fmt.Sprint(s) {
		t.Fatalf("the rollout went on while paused: %v, then %v", s, before)
	}
	start()
	// After the restart the rollout is still paused on r-1: nothing recreated again, nothing
	// skipped.
	time.Sleep(3 * time.Second)
	if after := state(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the restart changed children while r-1 holds the rollout: %v, then %v", before, after)
	}
	ready("r-1")
	s = waitFor("r-2 recreated", values("v2", "v2", "v2", "v1"))
	if s["r-0"] != before["r-0"] || s["r-1"] != before["r-1"] {
		t.Fatalf("a child updated before the restart was updated again: %v, then %v", before, s)
	}
	ready("r-2")
	s = waitFor("r-3 recreated", values("v2", "v2", "v2", "v2"))
	ready("r-3")
	time.Sleep(time.Second)
	if final := state(); fmt.Sprint(final) != fmt.Sprint(s) {
		t.Fatalf("children changed after the rollout ended: %v, then %v", s, final)
	}
}
