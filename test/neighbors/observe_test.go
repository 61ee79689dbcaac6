package neighbors

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"metascript.dev/metascript/test/enginetest"
)

// watchConvergence watches namespace ns from now on and sends, once, the time at which
// parents × children ConfigMaps exist and every parent's status counts its children.
func watchConvergence(t *testing.T, ctx context.Context, c dynamic.Interface, ns string, parents, children int) <-chan time.Time {
	t.Helper()
	open := func(gvr schema.GroupVersionResource) watch.Interface {
		w, err := c.Resource(gvr).Namespace(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("watching %s: %v", gvr.Resource, err)
		}
		return w
	}
	cms, fanouts := open(configMaps), open(enginetest.Fanouts)
	done := make(chan time.Time, 1)
	go func() {
		defer cms.Stop()
		defer fanouts.Stop()
		seen, written := map[string]bool{}, map[string]bool{}
		for len(seen) < parents*children || len(written) < parents {
			var ev watch.Event
			var ok bool
			select {
			case ev, ok = <-cms.ResultChan():
			case ev, ok = <-fanouts.ResultChan():
			case <-ctx.Done():
				return
			}
			if !ok {
				return // the test fails on its context
			}
			u, isU := ev.Object.(*unstructured.Unstructured)
			if !isU || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			if u.GetKind() == "ConfigMap" {
				if _, child := u.GetLabels()["fanout"]; child {
					seen[u.GetName()] = true
				}
				continue
			}
			if n, found, _ := unstructured.NestedInt64(u.Object, "status", "children"); found && n == int64(children) {
				written[u.GetName()] = true
			}
		}
		done <- time.Now()
	}()
	return done
}

// waitFor polls cond every 50ms until it holds; it fails the test when ctx ends first.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// poll checks cond every 50ms for up to timeout; false when it did not hold by then.
func poll(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

// events lists the reasons and messages of the Events in namespace ns, to say why a wait
// failed.
func events(ctx context.Context, c dynamic.Interface, ns string) []string {
	list, err := c.Resource(schema.GroupVersionResource{Version: "v1", Resource: "events"}).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, ev := range list.Items {
		reason, _, _ := unstructured.NestedString(ev.Object, "reason")
		msg, _, _ := unstructured.NestedString(ev.Object, "message")
		out = append(out, reason+": "+msg)
	}
	return out
}

func create(t *testing.T, ctx context.Context, c dynamic.Interface, gvr schema.GroupVersionResource, ns string, obj *unstructured.Unstructured) {
	t.Helper()
	var err error
	if ns == "" {
		_, err = c.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{})
	} else {
		_, err = c.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatalf("creating %s %s: %v", gvr.Resource, obj.GetName(), err)
	}
}

func namespace(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": name}}}
}

// slug is name in lower case with dashes: a namespace's or a file's.
func slug(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, " ", "-"))
}

// selfCPU is the user plus system CPU time of this process: the engine, which runs in it,
// and the test's own watches and creates.
func selfCPU(t *testing.T) float64 {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// processCPU is the user plus system CPU time of process pid, from /proc/<pid>/stat, whose
// unit is the kernel's USER_HZ, 100 on Linux.
func processCPU(t *testing.T, pid int) float64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: the fields start after it.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	utime, err1 := strconv.ParseUint(fields[11], 10, 64)
	stime, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %v %v", pid, err1, err2)
	}
	return float64(utime+stime) / 100
}

// startProfile starts a CPU profile of this process into dir/<configuration>.pprof.
func startProfile(t *testing.T, dir, configuration string) *os.File {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, slug(configuration)+".pprof"))
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	t.Logf("CPU profile: %s", f.Name())
	return f
}

// resetPeakRSS starts the process's peak resident set size (VmHWM) anew.
func resetPeakRSS(t *testing.T) {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Logf("peak RSS not reset: %v", err)
	}
}

// peakRSS is the process's peak resident set size since resetPeakRSS, in MiB.
func peakRSS(t *testing.T) float64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb / 1024
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
