package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"metascript.dev/metascript/test/controlplane"
	"metascript.dev/metascript/test/engineproc"
	"metascript.dev/metascript/test/enginetest"
)

// metacontrollerVersion is the release of Metacontroller the phase is written for: its
// flags, its CompositeController and its webhook's request.
const metacontrollerVersion = "v4.17.2"

const (
	metacontrollerUser = "metacontroller"
	metacontrollerNS   = "metacontroller"
)

// Metacontroller's resources, which it watches.
var (
	mcCompositeControllers = schema.GroupVersionResource{Group: "metacontroller.k8s.io", Version: "v1alpha1", Resource: "compositecontrollers"}
	mcDecoratorControllers = schema.GroupVersionResource{Group: "metacontroller.k8s.io", Version: "v1alpha1", Resource: "decoratorcontrollers"}
	mcControllerRevisions  = schema.GroupVersionResource{Group: "metacontroller.k8s.io", Version: "v1alpha1", Resource: "controllerrevisions"}
)

// metacontrollerInstall is a Metacontroller binary and the folder of its CRDs.
type metacontrollerInstall struct{ bin, crds string }

// findMetacontroller finds the binary at $METACONTROLLER_BIN, else
// <root>/.cache/metacontroller/<version>/metacontroller, and its CRDs at $METACONTROLLER_CRDS,
// else in crds/ beside the binary. The error says what is missing and how to give it.
func findMetacontroller(root string) (metacontrollerInstall, error) {
	in := metacontrollerInstall{bin: os.Getenv("METACONTROLLER_BIN"), crds: os.Getenv("METACONTROLLER_CRDS")}
	if in.bin == "" {
		in.bin = filepath.Join(root, ".cache", "metacontroller", metacontrollerVersion, "metacontroller")
	}
	if in.crds == "" {
		in.crds = filepath.Join(filepath.Dir(in.bin), "crds")
	}
	how := fmt.Sprintf("set METACONTROLLER_BIN to a Metacontroller %s binary built from its source and METACONTROLLER_CRDS to the folder of its CRDs (its manifests/production/metacontroller-crds-v1.yaml)", metacontrollerVersion)
	if st, err := os.Stat(in.bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return in, fmt.Errorf("no Metacontroller binary at %s: %s", in.bin, how)
	}
	if yamls, _ := filepath.Glob(filepath.Join(in.crds, "*.yaml")); len(yamls) == 0 {
		return in, fmt.Errorf("no Metacontroller CRDs (*.yaml) in %s: %s", in.crds, how)
	}
	return in, nil
}

// metacontrollerResult is what the Metacontroller phase measured, or why it did not run.
type metacontrollerResult struct {
	skipped          string // why the phase did not run; empty when it ran
	version          string // as Metacontroller logs it at start
	converge, tail   phase  // cold start to converged; converged to settled
	calls, tailCalls int64  // of its sync webhook
	peakRSS          int64  // at convergence, bytes
	log              string // its log's errors, if any
}

// runMetacontroller is the Metacontroller phase, between the floor and the engine: the same
// parents, in their own namespace, converged by Metacontroller with the engine's hook served
// as a webhook from this process. Metacontroller runs as its own process under its own user
// with the engine's worker count and an unlimited client rate; it is stopped and its
// CompositeController and objects deleted before the engine starts, so the two never run
// together.
func (b *bench) runMetacontroller(ctx context.Context, in metacontrollerInstall, dir string, p params,
	user func(string) (*rest.Config, []byte), observerCfg *rest.Config) metacontrollerResult {
	t := b.t
	t.Helper()
	var r metacontrollerResult
	_, kubeconfigData := user(metacontrollerUser)
	kubeconfig := filepath.Join(dir, "metacontroller.kubeconfig")
	if err := os.WriteFile(kubeconfig, kubeconfigData, 0o600); err != nil {
		t.Fatal(err)
	}
	hook := startHookServer()
	defer hook.Close()

	b.createNamespace(ctx, metacontrollerNS)
	cc := enginetest.ObjectsFromFile(t, filepath.Join("testdata", "metacontroller.yaml"))[0]
	if err := unstructured.SetNestedField(cc.Object, hook.URL+"/sync", "spec", "hooks", "sync", "webhook", "url"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.admin.Resource(mcCompositeControllers).Create(ctx, cc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := createParents(ctx, b.admin, metacontrollerNS, p.parents, p.children, 20); err != nil {
		t.Fatal(err)
	}
	obs, err := observe(ctx, observerCfg, metacontrollerNS, p.parents, p.children)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.end()
	if err := enginetest.WarmWatchCaches(ctx, b.admin, mcCompositeControllers, mcDecoratorControllers,
		mcControllerRevisions, fanouts, configMaps); err != nil {
		t.Fatal(err)
	}
	b.read(b.mark())
	start := b.mark()
	obs.begin(ctx)
	// No rediscovery or cache relist within the run: the engine does neither. Every server it
	// could open is off (metrics, health probes, pprof).
	proc, err := engineproc.Exec(dir, "metacontroller", in.bin, []string{"KUBECONFIG=" + kubeconfig},
		"--workers", strconv.Itoa(p.workers), "--client-go-qps", "1e6", "--client-go-burst", "1000000",
		"--discovery-interval", "1h", "--cache-flush-interval", "1h",
		"--metrics-address", "0", "--health-probe-bind-address", "0", "--pprof-address", "0",
		"--leader-election=false", "--zap-log-level", "info")
	if err != nil {
		t.Fatal(err)
	}
	b.engine = proc
	defer func() {
		proc.Stop()
		b.engine = nil
	}()
	timeout := phaseTimeout(p)
	phaseCtx, phaseCancel := context.WithTimeout(ctx, timeout)
	defer phaseCancel()
	b.await(phaseCtx, obs.done, func() string {
		s, c := obs.counts()
		return fmt.Sprintf("Metacontroller did not converge: %d of %d statuses, %d of %d children",
			s, p.parents, c, p.parents*p.children)
	})
	converged := b.mark()
	calls := hook.calls.Load()
	if r.peakRSS, err = engineproc.PeakRSS(proc.Pid()); err != nil {
		t.Fatal(err)
	}
	r.converge.first, r.converge.took, r.converge.samples = obs.result()
	r.converge.costs(start, converged)
	settled, settledCalls := b.settleQuiet(phaseCtx, &hook.calls)
	r.tail.took = settled.at.Sub(converged.at)
	r.tail.costs(converged, settled)
	r.converge.requests = b.read(converged)
	r.tail.requests = b.read(settled)
	r.calls, r.tailCalls = calls, settledCalls-calls
	logText, err := os.ReadFile(proc.LogFile())
	if err != nil {
		t.Fatal(err)
	}
	r.version = loggedVersion(string(logText))
	r.log = errorLines(string(logText))

	// Its CompositeController goes first, while it runs, so that it lets go of the parents;
	// then the process; then the objects, which nothing watches any more.
	if err := b.admin.Resource(mcCompositeControllers).Delete(ctx, cc.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	proc.Stop()
	b.engine = nil
	b.deleteAll(ctx, metacontrollerNS)
	return r
}

// settleQuiet waits until neither the audit log nor calls has changed for a second, and
// returns the mark of that second's start and calls then. It is how a controller without the
// engine's metrics is seen to be done.
func (b *bench) settleQuiet(ctx context.Context, calls interface{ Load() int64 }) (mark, int64) {
	b.t.Helper()
	quiet, n := b.mark(), calls.Load()
	for {
		if err := b.engine.Running(); err != nil {
			b.t.Fatal(err)
		}
		now, m := b.mark(), calls.Load()
		if now.audit != quiet.audit || m != n {
			quiet, n = now, m
		} else if time.Since(quiet.at) >= time.Second {
			return quiet, n
		}
		select {
		case <-ctx.Done():
			b.t.Fatalf("Metacontroller did not settle: %v", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

var versionField = regexp.MustCompile(`"version":\s*"([^"]*)"`)

// loggedVersion is the version Metacontroller logs with its configuration at start.
func loggedVersion(log string) string {
	if m := versionField.FindStringSubmatch(log); m != nil {
		return m[1]
	}
	return "unknown"
}

var errorLevel = regexp.MustCompile(`"level":\s*"(error|dpanic|panic|fatal)"`)

// errorLines are the lines of a JSON log at level error or above.
func errorLines(log string) string {
	var out strings.Builder
	for line := range strings.Lines(log) {
		if errorLevel.MatchString(line) {
			out.WriteString(line)
		}
	}
	return out.String()
}

// TestScaleMetacontrollerSmoke is the benchmark at 5 × 2 with the Metacontroller phase. It
// runs only where the binary is found (findMetacontroller) and checks that each measurement
// of that phase is made.
func TestScaleMetacontrollerSmoke(t *testing.T) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := findMetacontroller(root); err != nil {
		enginetest.SkipMissing(t, err.Error())
	}
	p := params{parents: 5, children: 2, workers: 5, metacontroller: true}
	r := run(t, p)
	report(t, r)
	mc := r.mc
	if mc.skipped != "" {
		t.Fatalf("the phase did not run: %s", mc.skipped)
	}
	total, writes, children := requestTotals(mc.converge.requests[metacontrollerUser], func(res string) bool { return res == "configmaps" })
	if total == 0 || writes < children || children < p.parents*p.children {
		t.Errorf("Metacontroller's converging requests: %d, %d writes, %d to ConfigMaps (want ≥ %d):\n%s",
			total, writes, children, p.parents*p.children, formatKinds(mc.converge.requests[metacontrollerUser], "  "))
	}
	if _, _, n := requestTotals(mc.converge.requests[metacontrollerUser], func(res string) bool { return res == "fanouts/status" }); n < p.parents {
		t.Errorf("Metacontroller wrote %d statuses, want ≥ %d", n, p.parents)
	}
	if mc.calls < int64(p.parents) {
		t.Errorf("%d webhook calls, want ≥ %d", mc.calls, p.parents)
	}
	if mc.converge.engineCPU <= 0 || mc.peakRSS <= 0 || mc.converge.took <= 0 {
		t.Errorf("not measured: CPU %.2fs, peak RSS %d bytes, time %v", mc.converge.engineCPU, mc.peakRSS, mc.converge.took)
	}
	if mc.log != "" {
		t.Errorf("Metacontroller logged errors:\n%s", mc.log)
	}
}
