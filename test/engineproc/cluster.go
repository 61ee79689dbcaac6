package engineproc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"metascript.dev/metascript/test/controlplane"
	"metascript.dev/metascript/test/enginetest"
)

// Cluster is a control plane for tests that run engines as processes on Fanouts: the
// repository's CRDs and the Fanout CRD installed, a namespace, the CompositeController
// "scale" (test/scale/testdata/controller.yaml: each Fanout keeps spec.children ConfigMaps
// and says how many in its status), and the engine built.
type Cluster struct {
	*controlplane.ControlPlane
	// Admin reaches the API server as a member of system:masters.
	Admin dynamic.Interface
	// Audit is the API server's audit log, when asked for.
	Audit    string
	bin, dir string
}

// StartCluster starts a Cluster with namespace ns (and an audit log if audit), stopped when t
// ends.
func StartCluster(t testing.TB, ns string, audit bool) *Cluster {
	t.Helper()
	dir := t.TempDir()
	bin, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{bin: bin, dir: dir}
	opts := controlplane.Options{CRDDirs: []string{filepath.Join(root, "manifests", "crds"), enginetest.FanoutCRDs(root)}}
	if audit {
		c.Audit = filepath.Join(dir, "audit.log")
		opts.AuditLog = c.Audit
	}
	if c.ControlPlane, err = controlplane.Start(opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	ctx := context.Background()
	c.Admin = dynamic.NewForConfigOrDie(c.Config)
	if _, err := kubernetes.NewForConfigOrDie(c.Config).CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cc := enginetest.ObjectsFromFile(t, filepath.Join(root, "test", "scale", "testdata", "controller.yaml"))[0]
	controllers := schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1", Resource: "compositecontrollers"}
	if _, err := c.Admin.Resource(controllers).Create(ctx, cc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// Engine starts `metascript run` (see Start) as user, with a kubeconfig of its own so that
// the audit log names it, stopped when t ends.
func (c *Cluster) Engine(t testing.TB, user string, workers int, extra ...string) *Process {
	t.Helper()
	_, kubeconfig, err := c.User(user)
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(c.dir, user+".kubeconfig")
	if err := os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := Start(c.bin, c.dir, kc, workers, false, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

// WaitFor polls cond every 100 ms until it holds, failing the test with cond's last message
// when ctx ends first.
func WaitFor(t testing.TB, ctx context.Context, cond func() (bool, string)) {
	t.Helper()
	for {
		ok, msg := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("condition not met: %s", msg)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WaitConverged waits until every one of parents Fanouts in namespace ns says in its status
// that it has children ConfigMaps, and the namespace holds exactly that many children.
func (c *Cluster) WaitConverged(t testing.TB, ctx context.Context, ns string, parents, children int) {
	t.Helper()
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	WaitFor(t, ctx, func() (bool, string) {
		list, err := c.Admin.Resource(enginetest.Fanouts).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		done := 0
		for _, p := range list.Items {
			if n, _, _ := unstructured.NestedInt64(p.Object, "status", "children"); n == int64(children) {
				done++
			}
		}
		cms, err := c.Admin.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "fanout"})
		if err != nil {
			return false, err.Error()
		}
		return done == parents && len(cms.Items) == parents*children,
			fmt.Sprintf("%d of %d parents converged, %d of %d children", done, parents, len(cms.Items), parents*children)
	})
}

// WaitReady waits until every engine answers /readyz, failing the test if one exits.
func WaitReady(t testing.TB, ctx context.Context, engines ...*Process) {
	t.Helper()
	WaitFor(t, ctx, func() (bool, string) {
		ready := 0
		for _, e := range engines {
			if err := e.Running(); err != nil {
				t.Fatal(err)
			}
			if e.Ready(ctx) {
				ready++
			}
		}
		return ready == len(engines), fmt.Sprintf("%d of %d engines ready", ready, len(engines))
	})
}
