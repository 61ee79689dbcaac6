// Package image runs the engine's container image as its users run it: built by build.sh
// beside this file, started with podman against the local control plane with the in-cluster
// configuration of the ServiceAccount and RBAC of manifests/base, and the Deployment's own
// arguments; its probes answer and the scale controller's parents converge.
package image

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"metascript.dev/metascript/test/controlplane"
	"metascript.dev/metascript/test/engineproc"
	"metascript.dev/metascript/test/enginetest"
)

const (
	namespace = "image"
	// The ServiceAccount of manifests/base/rbac, and its namespace.
	engineNS, engineSA = "metascript-system", "metascript"
)

// podman runs podman with the runtime and limits that work on these machines' cgroup v1
// (crun refuses hybrid cgroups; the default ulimits exceed what the sandbox allows).
func podman(args ...string) *exec.Cmd {
	return exec.Command("podman", append([]string{"--runtime", "/usr/sbin/runc"}, args...)...)
}

func TestImageRunsInCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane and podman")
	}
	image := buildImage(t)
	c := engineproc.StartCluster(t, namespace, false)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	for _, f := range []string{"namespace.yaml", "rbac/serviceaccount.yaml", "rbac/engine-role.yaml",
		"rbac/managed-resources-role.yaml", "rbac/impersonate-role.yaml", "rbac/leader-election-role.yaml"} {
		apply(t, ctx, c, mapper, filepath.Join(root, "manifests", "base", f))
	}
	mount := serviceAccountMount(t, ctx, c)

	host, port, err := net.SplitHostPort(strings.TrimPrefix(c.Config.Host, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr, healthAddr := freeAddr(t), freeAddr(t)
	args := deploymentArgs(t, filepath.Join(root, "manifests", "base", "engine", "deployment.yaml"),
		"--metrics-addr="+metricsAddr, "--health-addr="+healthAddr)
	name := fmt.Sprintf("metascript-image-test-%d", os.Getpid())
	run := append([]string{"run", "-d", "--name", name, "--network=host",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
		"--read-only", "--user", "65532:65532", "--cap-drop=all", "--security-opt=no-new-privileges",
		"-v", mount + ":/var/run/secrets/kubernetes.io/serviceaccount:ro",
		"-e", "KUBERNETES_SERVICE_HOST=" + host, "-e", "KUBERNETES_SERVICE_PORT=" + port,
		image}, args...)
	if out, err := podman(run...).CombinedOutput(); err != nil {
		t.Fatalf("podman %v: %v\n%s", run, err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := podman("logs", "--tail", "60", name).CombinedOutput()
			t.Logf("the engine's log ends:\n%s", out)
		}
		_ = podman("rm", "-f", "-t", "5", name).Run()
	})

	// The probes of the Deployment answer: /healthz alive, /readyz leading and started.
	for _, probe := range []string{"/healthz", "/readyz"} {
		engineproc.WaitFor(t, ctx, func() (bool, string) {
			if out, err := podman("inspect", "-f", "{{.State.Running}}", name).Output(); err != nil || strings.TrimSpace(string(out)) != "true" {
				t.Fatalf("the container is not running (%v): %s", err, out)
			}
			resp, err := http.Get("http://" + healthAddr + probe)
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, fmt.Sprintf("%s answers %d", probe, resp.StatusCode)
		})
	}
	for i := range 3 {
		if _, err := c.Admin.Resource(enginetest.Fanouts).Namespace(namespace).Create(ctx,
			enginetest.Fanout(fmt.Sprintf("p%d", i), 2), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitConverged(t, ctx, namespace, 3, 2)
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	_, _ = metrics.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(metrics.String(), `metascript_leader_election_is_leader{lease="metascript-system/`) {
		t.Errorf("the engine does not lead a Lease of its own namespace, read from the mounted ServiceAccount: %s",
			grep(metrics.String(), "metascript_leader_election_is_leader"))
	}
}

// buildImage runs build.sh and returns the image's name.
func buildImage(t *testing.T) string {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command("bash", "build.sh", "localhost/metascript:test")
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("test/image/build.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	return lines[len(lines)-1]
}

// apply creates every object of the file at path, its resources found by mapper.
func apply(t *testing.T, ctx context.Context, c *engineproc.Cluster, mapper meta.RESTMapper, path string) {
	t.Helper()
	for _, obj := range enginetest.ObjectsFromFile(t, path) {
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if _, err := c.Admin.Resource(m.Resource).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: creating %s %s: %v", path, gvk.Kind, obj.GetName(), err)
		}
	}
}

// serviceAccountMount writes what the kubelet mounts for the engine's ServiceAccount (a
// bound token, the API server's CA, the namespace) into a folder the container's user may
// read, and returns the folder.
func serviceAccountMount(t *testing.T, ctx context.Context, c *engineproc.Cluster) string {
	t.Helper()
	tr, err := kubernetes.NewForConfigOrDie(c.Config).CoreV1().ServiceAccounts(engineNS).CreateToken(ctx, engineSA,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string][]byte{"token": []byte(tr.Status.Token), "ca.crt": c.Config.CAData, "namespace": []byte(engineNS)}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// deploymentArgs are the engine container's arguments in the Deployment at path, with each
// flag of overrides replacing the one of that name.
func deploymentArgs(t *testing.T, path string, overrides ...string) []string {
	t.Helper()
	objs := enginetest.ObjectsFromFile(t, path)
	containers, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		t.Fatalf("%s: no containers", path)
	}
	raw, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	var args []string
	for _, a := range raw {
		flag, _, _ := strings.Cut(a, "=")
		replaced := false
		for _, o := range overrides {
			if of, _, _ := strings.Cut(o, "="); of == flag {
				args, replaced = append(args, o), true
			}
		}
		if !replaced {
			args = append(args, a)
		}
	}
	return args
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := engineproc.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// grep returns the lines of text that hold s.
func grep(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
