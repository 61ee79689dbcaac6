// Package manifests checks the deployment manifests in manifests/: the kustomizations list
// them all, the Helm chart's CRDs are the manifests' own, the Deployment wires the probes and ports the engine serves, the shipped
// ServiceAccount holds every permission the engine uses, and the engine role is complete: an
// engine running under it plus a rule for its controller's resources alone (the narrowing
// that manifests/base/rbac/managed-resources-role.yaml documents) runs a controller end to end.
// The optional admission webhook's manifests (manifests/admission, its own kustomization)
// decode strictly, agree with one another and with engine/kinds, and are accepted by the API
// server (admission_test.go).
package manifests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/test/controlplane"
	"metascript.dev/metascript/test/enginetest"
)

const (
	namespace      = "metascript-system"
	serviceAccount = "metascript"
	// narrowAccount has the engine role and testdata/narrow-rbac.yaml's rules only.
	narrowAccount = "metascript-narrow"
)

var (
	env  *enginetest.Env
	root string
)

func TestMain(m *testing.M) {
	var err error
	if root, err = controlplane.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	env, err = enginetest.Start(enginetest.Options{
		CRDDirs: []string{filepath.Join("testdata", "crds")},
		BeforeEngine: func(cp *controlplane.ControlPlane) error {
			files, err := kustomizationResources()
			if err != nil {
				return err
			}
			return apply(cp.Config, append(files, filepath.Join("testdata", "narrow-rbac.yaml"))...)
		},
		EngineConfig: func(c *rest.Config) { c.Impersonate = serviceAccountUser(narrowAccount) },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

func serviceAccountUser(name string) rest.ImpersonationConfig {
	return rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
}

// kustomization is the part of a kustomization.yaml these tests read.
type kustomization struct {
	Resources []string `json:"resources"`
	Patches   []struct {
		Path string `json:"path"`
	} `json:"patches"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// readKustomization reads dir/kustomization.yaml; dir is relative to manifests/.
func readKustomization(dir string) (*kustomization, error) {
	data, err := os.ReadFile(filepath.Join(root, "manifests", dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k kustomization
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("manifests/%s/kustomization.yaml: %w", dir, err)
	}
	return &k, nil
}

// kustomizationResources returns the files `kubectl apply -k manifests/` installs, in its
// order: the resources of manifests/kustomization.yaml, a directory standing for the
// resources of its own kustomization. Patches are refused: applying the files as they are
// would then not be what kustomize renders (the overlays are checked rendered, by make
// manifests-check).
func kustomizationResources() ([]string, error) {
	var files []string
	var walk func(dir string) error
	walk = func(dir string) error {
		k, err := readKustomization(dir)
		if err != nil {
			return err
		}
		if len(k.Patches) > 0 {
			return fmt.Errorf("manifests/%s/kustomization.yaml has patches: the installed base must have none", dir)
		}
		for _, r := range k.Resources {
			rel := filepath.Join(dir, r)
			info, err := os.Stat(filepath.Join(root, "manifests", rel))
			if err != nil {
				return fmt.Errorf("manifests/%s/kustomization.yaml: %w", dir, err)
			}
			if info.IsDir() {
				if err := walk(rel); err != nil {
					return err
				}
				continue
			}
			files = append(files, filepath.Join(root, "manifests", rel))
		}
		return nil
	}
	return files, walk(".")
}

// apply server-side applies every document of files, in order, as the control plane's admin.
func apply(cfg *rest.Config, files ...string) error { return applyFiles(cfg, false, files...) }

// applyFiles is apply, only validated and not persisted when dryRun is set.
func applyFiles(cfg *rest.Config, dryRun bool, files ...string) error {
	dyn := dynamic.NewForConfigOrDie(cfg)
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	for _, file := range files {
		for _, obj := range documents(file) {
			groups, err := restmapper.GetAPIGroupResources(dc)
			if err != nil {
				return err
			}
			gvk := obj.GroupVersionKind()
			m, err := restmapper.NewDiscoveryRESTMapper(groups).RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", file, gvk, err)
			}
			var r dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				r = dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
			}
			data, err := obj.MarshalJSON()
			if err != nil {
				return err
			}
			force := true
			opts := metav1.PatchOptions{FieldManager: "manifests-test", Force: &force}
			if dryRun {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			if _, err := r.Patch(context.Background(), obj.GetName(), types.ApplyPatchType, data, opts); err != nil {
				return fmt.Errorf("%s: applying %s %s: %w", file, obj.GetKind(), obj.GetName(), err)
			}
		}
	}
	return nil
}

func documents(file string) []*unstructured.Unstructured {
	data, err := os.ReadFile(file)
	if err != nil {
		panic(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			panic(fmt.Sprintf("%s: %v", file, err))
		}
		if m != nil {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	return out
}

// TestKustomizationListsEveryManifest: every YAML file under manifests/ is listed (as a
// resource or a patch) by the kustomization of its nearest directory that has one, so that
// no file is silently left out of what kustomize installs; and the base, what `kubectl apply
// -k manifests/` installs, includes the CRDs and none of the optional parts.
func TestKustomizationListsEveryManifest(t *testing.T) {
	dir := filepath.Join(root, "manifests")
	listed := map[string]bool{} // files listed by some kustomization, relative to manifests/
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "kustomization.yaml" {
			return err
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(path))
		k, err := readKustomization(rel)
		if err != nil {
			return err
		}
		for _, r := range k.Resources {
			listed[filepath.Join(rel, r)] = true
		}
		for _, p := range k.Patches {
			if p.Path != "" {
				listed[filepath.Join(rel, p.Path)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" || d.Name() == "kustomization.yaml" {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if !listed[rel] {
			t.Errorf("manifests/%s is not listed by the kustomization.yaml of its directory or the nearest one above", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	base, err := kustomizationResources()
	if err != nil {
		t.Fatal(err)
	}
	var crds int
	for _, f := range base {
		rel, _ := filepath.Rel(dir, f)
		switch top := strings.Split(filepath.ToSlash(rel), "/")[0]; top {
		case "crds":
			crds++
		case "base":
		default:
			t.Errorf("manifests/kustomization.yaml installs manifests/%s: only base/ and crds/ belong to the default install", rel)
		}
	}
	if want, _ := filepath.Glob(filepath.Join(dir, "crds", "metascript.dev_*.yaml")); crds != len(want) {
		t.Errorf("manifests/kustomization.yaml installs %d CRDs, want the %d in manifests/crds", crds, len(want))
	}
}

// TestChartCRDsAreTheManifestsCRDs: charts/metascript/crds holds byte-identical copies of
// manifests/crds (make chart-crds; make generate refreshes both), and nothing else.
func TestChartCRDsAreTheManifestsCRDs(t *testing.T) {
	want, _ := filepath.Glob(filepath.Join(root, "manifests", "crds", "metascript.dev_*.yaml"))
	got, _ := filepath.Glob(filepath.Join(root, "charts", "metascript", "crds", "*"))
	if len(want) == 0 {
		t.Fatal("no CRDs in manifests/crds")
	}
	names := map[string]bool{}
	for _, f := range got {
		names[filepath.Base(f)] = true
	}
	for _, f := range want {
		name := filepath.Base(f)
		if !names[name] {
			t.Errorf("charts/metascript/crds/%s is missing: run make chart-crds", name)
			continue
		}
		delete(names, name)
		a, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(root, "charts", "metascript", "crds", name))
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("charts/metascript/crds/%s differs from manifests/crds/%s: run make chart-crds", name, name)
		}
	}
	for name := range names {
		t.Errorf("charts/metascript/crds/%s is not in manifests/crds: run make chart-crds", name)
	}
}

func TestDeployment(t *testing.T) {
	var d appsv1.Deployment
	obj := documents(filepath.Join(root, "manifests", "base", "engine", "deployment.yaml"))[0]
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != serviceAccount || d.Namespace != namespace {
		t.Errorf("runs as %s/%s, want %s/%s", d.Namespace, pod.ServiceAccountName, namespace, serviceAccount)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "run" {
		t.Errorf("args = %v, want `run` first", c.Args)
	}
	for _, want := range []string{"--metrics-addr=:9090", "--health-addr=:9091"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args = %v, want %s", c.Args, want)
		}
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["metrics"] != 9090 || ports["health"] != 9091 {
		t.Errorf("ports = %v, want metrics 9090 and health 9091", ports)
	}
	probe := func(name string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "health" {
			t.Errorf("%s probe = %+v, want GET %s on the health port", name, p, path)
		}
	}
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("readiness", c.ReadinessProbe, "/readyz")

	k, err := readKustomization("base")
	if err != nil {
		t.Fatal(err)
	}
	image, _, _ := strings.Cut(c.Image, ":")
	if len(k.Images) != 1 || k.Images[0].Name != image {
		t.Errorf("kustomization images = %+v, want one entry named %s so that `kustomize edit set image` reaches the Deployment", k.Images, image)
	}
}

// TestShippedServiceAccountMayDoWhatTheEngineDoes asks the API server whether the shipped
// ServiceAccount may make each kind of request the engine makes.
func TestShippedServiceAccountMayDoWhatTheEngineDoes(t *testing.T) {
	user := serviceAccountUser(serviceAccount)
	type check struct{ verb, group, resource, subresource string }
	var checks []check
	for _, v := range []string{"get", "list", "watch"} {
		checks = append(checks, check{v, "metascript.dev", "compositecontrollers", ""},
			check{v, "metascript.dev", "decoratorcontrollers", ""}, check{v, "metascript.dev", "mapcontrollers", ""},
			check{v, "metascript.dev", "namespacedcompositecontrollers", ""},
			check{v, "metascript.dev", "namespaceddecoratorcontrollers", ""},
			check{v, "metascript.dev", "namespacedmapcontrollers", ""},
			check{v, "", "configmaps", ""})
	}
	checks = append(checks,
		check{"patch", "metascript.dev", "compositecontrollers", "status"},
		check{"patch", "metascript.dev", "decoratorcontrollers", "status"},
		check{"patch", "metascript.dev", "mapcontrollers", "status"},
		check{"patch", "metascript.dev", "namespacedcompositecontrollers", "status"},
		check{"patch", "metascript.dev", "namespaceddecoratorcontrollers", "status"},
		check{"patch", "metascript.dev", "namespacedmapcontrollers", "status"},
		check{"create", "metascript.dev", "controllerrevisions", ""}, check{"patch", "metascript.dev", "controllerrevisions", ""},
		check{"delete", "metascript.dev", "controllerrevisions", ""}, check{"watch", "metascript.dev", "controllerrevisions", ""},
		check{"create", "", "events", ""}, check{"patch", "", "events", ""}, check{"create", "events.k8s.io", "events", ""},
		// Webhook CA bundles, credentials and client certificates.
		check{"get", "", "secrets", ""},
		// Controllers naming a spec.serviceAccount.
		check{"impersonate", "", "serviceaccounts", ""}, check{"create", "authorization.k8s.io", "subjectaccessreviews", ""})
	// Any parent and child resource: the documented broad rule.
	for _, r := range []struct{ group, resource string }{{"examples.metascript.dev", "websites"}, {"apps", "deployments"}, {"", "secrets"}} {
		for _, v := range []string{"get", "list", "watch", "create", "update", "patch", "delete"} {
			checks = append(checks, check{v, r.group, r.resource, ""})
		}
		checks = append(checks, check{"patch", r.group, r.resource, "status"}, check{"update", r.group, r.resource, "finalizers"})
	}
	type located struct {
		check
		namespace string
	}
	var all []located
	for _, c := range checks {
		all = append(all, located{c, "default"})
	}
	// Leader election, in the engine's own namespace.
	for _, v := range []string{"get", "create", "update"} {
		all = append(all, located{check{v, "coordination.k8s.io", "leases", ""}, "metascript-system"})
	}
	for _, c := range all {
		review, err := env.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user.UserName, Groups: user.Groups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: c.namespace, Verb: c.verb,
					Group: c.group, Resource: c.resource, Subresource: c.subresource},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !review.Status.Allowed {
			t.Errorf("%s may not %s %s.%s/%s: %s", user.UserName, c.verb, c.resource, c.group, c.subresource, review.Status.Reason)
		}
	}
}

// TestEngineRunsUnderEngineRoleAndNarrowRule runs a controller end to end with the engine
// impersonating narrowAccount: hook source read from a ConfigMap, controller status, children
// created, parent status and finalizer written, a Warning Event recorded, finalize.
func TestEngineRunsUnderEngineRoleAndNarrowRule(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(impersonating(narrowAccount))
	review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := review.Status.UserInfo.Username, serviceAccountUser(narrowAccount).UserName; got != want {
		t.Fatalf("impersonation not in force: the engine's config authenticates as %q, want %q", got, want)
	}

	if err := apply(env.ControlPlane.Config, filepath.Join("testdata", "notes-controller.yaml")); err != nil {
		t.Fatal(err)
	}
	enginetest.Eventually(t, 30*time.Second, func() (bool, string) {
		cc := env.Get(t, "metascript.dev/v1alpha1", "CompositeController", "", "notes")
		return enginetest.Condition(cc, "Ready") == "True", fmt.Sprintf("controller status = %v", cc.Object["status"])
	})

	ns := env.Namespace(t)
	note := env.Create(t, ns, enginetest.Object(t, `{"apiVersion":"rbac.metascript.dev/v1","kind":"Note","metadata":{"name":"hello"},"spec":{"text":"hi"}}`))
	enginetest.Eventually(t, 30*time.Second, func() (bool, string) {
		cm, secret := env.Get(t, "v1", "ConfigMap", ns, "hello"), env.Get(t, "v1", "Secret", ns, "hello")
		n := env.Get(t, "rbac.metascript.dev/v1", "Note", ns, "hello")
		count, _, _ := unstructured.NestedInt64(n.Object, "status", "children")
		return cm != nil && secret != nil && count == 2 && len(n.GetFinalizers()) == 1,
			fmt.Sprintf("ConfigMap %v, Secret %v, note status %v, finalizers %v", cm != nil, secret != nil, n.Object["status"], n.GetFinalizers())
	})

	env.Create(t, ns, enginetest.Object(t, `{"apiVersion":"rbac.metascript.dev/v1","kind":"Note","metadata":{"name":"broken"},"spec":{"text":"x","fail":true}}`))
	enginetest.Eventually(t, 30*time.Second, func() (bool, string) {
		events := env.Events(t, ns, "broken")
		return len(events) > 0, "no Event about the failing note"
	})

	env.Delete(t, note)
	enginetest.Eventually(t, 30*time.Second, func() (bool, string) {
		gone := env.Get(t, "rbac.metascript.dev/v1", "Note", ns, "hello") == nil &&
			env.Get(t, "v1", "ConfigMap", ns, "hello") == nil && env.Get(t, "v1", "Secret", ns, "hello") == nil
		return gone, "note or its children still exist"
	})
}

func impersonating(account string) *rest.Config {
	cfg := rest.CopyConfig(env.ControlPlane.Config)
	cfg.Impersonate = serviceAccountUser(account)
	return cfg
}

// TestDockerfile: the image is built with the Go of go.mod's go line, as a static binary,
// and runs as the non-root user the manifests' pods declare. Its base images cannot be pulled
// on the build machines, so this reads the Dockerfile (test/image builds and runs the image
// from scratch instead).
func TestDockerfile(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var goLine string
	for _, l := range strings.Split(string(mod), "\n") {
		if v, ok := strings.CutPrefix(l, "go "); ok {
			goLine = strings.TrimSpace(v)
		}
	}
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	for _, want := range []string{
		"FROM golang:" + goLine + " AS build", "CGO_ENABLED=0", "-trimpath",
		"FROM gcr.io/distroless/static:nonroot", "USER 65532:65532", `ENTRYPOINT ["/metascript"]`,
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q (go.mod's go line is %s)", want, goLine)
		}
	}
}
