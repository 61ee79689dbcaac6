// Package rendered checks the install as the real tools render it: every object of every
// kustomize overlay and every mode of the Helm chart is accepted by a real kube-apiserver in
// a server-side dry run, every engine pod meets Pod Security "restricted" (the API server's
// admission decides), and kustomize and Helm agree on what matters per mode.
//
// make manifests-check renders the files (kustomize and helm run as pinned Go modules) and
// passes their directory with -rendered; without it the tests are skipped and no control
// plane is started, so that `go test ./test/...` does not need the tools.
package rendered

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/test/controlplane"
)

// namespace is where every rendering installs the engine (helm template -n metascript-system).
const namespace = "metascript-system"

// modes are the install modes; make manifests-check writes kustomize-<mode>.yaml and
// helm-<mode>.yaml for each.
var modes = []string{"single", "ha", "sharded"}

var (
	renderedDir = flag.String("rendered", "", "directory of the rendered manifests (make manifests-check)")
	cp          *controlplane.ControlPlane
)

func TestMain(m *testing.M) {
	flag.Parse()
	if *renderedDir == "" {
		fmt.Println("skipped: no -rendered directory (make manifests-check renders the manifests and passes it)")
		os.Exit(0)
	}
	var err error
	cp, err = controlplane.Start(controlplane.Options{CRDDirs: []string{filepath.Join("testdata", "crds")}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The namespace exists for real, enforcing restricted as the shipped one does, so that
	// namespaced objects can be dry-run into it and Pod Security admission judges the pods.
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	_, err = kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   namespace,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}, metav1.CreateOptions{})
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	cp.Stop()
	os.Exit(code)
}

// rendering is one rendered file's objects, in order.
type rendering struct {
	file    string
	objects []*unstructured.Unstructured
}

func read(t *testing.T, name string) *rendering {
	t.Helper()
	file := filepath.Join(*renderedDir, name)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r := &rendering{file: name}
	for i, doc := range strings.Split(string(data), "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%s: document %d: %v", name, i+1, err)
		}
		if m != nil { // a document of comments only (helm's "# Source:" lines of an empty template)
			r.objects = append(r.objects, &unstructured.Unstructured{Object: m})
		}
	}
	if len(r.objects) == 0 {
		t.Fatalf("%s: no objects", name)
	}
	return r
}

// one decodes the only object of kind named name (any name when empty) into out.
func (r *rendering) one(t *testing.T, kind, name string, out any) {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range r.objects {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d %s %q, want 1", r.file, len(found), kind, name)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(found[0].Object, out); err != nil {
		t.Fatalf("%s: %s %s: %v", r.file, kind, found[0].GetName(), err)
	}
}

// renderings are every file make manifests-check wrote.
func renderings(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(*renderedDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	for _, m := range modes {
		for _, want := range []string{"kustomize-" + m + ".yaml", "helm-" + m + ".yaml"} {
			if !slices.Contains(names, want) {
				t.Errorf("%s was not rendered", want)
			}
		}
	}
	return names
}

// TestServerSideDryRun applies every rendered object to the API server with dryRun=All:
// the server decodes it strictly (an unknown or misspelt field is an error), validates it,
// and runs admission, and persists nothing, so renderings that install the same objects do
// not meet.
func TestServerSideDryRun(t *testing.T) {
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	groups, err := restmapper.GetAPIGroupResources(discovery.NewDiscoveryClientForConfigOrDie(cp.Config))
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	for _, name := range renderings(t) {
		t.Run(name, func(t *testing.T) {
			r := read(t, name)
			for _, obj := range r.objects {
				what := fmt.Sprintf("%s: %s %s", name, obj.GetKind(), obj.GetName())
				gvk := obj.GroupVersionKind()
				m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					t.Errorf("%s: %v", what, err)
					continue
				}
				var res dynamic.ResourceInterface = dyn.Resource(m.Resource)
				if m.Scope.Name() == meta.RESTScopeNameNamespace {
					if obj.GetNamespace() != namespace {
						t.Errorf("%s: namespace %q, want %q", what, obj.GetNamespace(), namespace)
						continue
					}
					res = dyn.Resource(m.Resource).Namespace(namespace)
				}
				data, err := obj.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				force := true
				_, err = res.Patch(context.Background(), obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
					FieldManager: "manifests-check", Force: &force, DryRun: []string{metav1.DryRunAll},
					FieldValidation: metav1.FieldValidationStrict,
				})
				if err != nil {
					t.Errorf("%s: %v", what, err)
				}
			}
		})
	}
}

// TestPodsMeetPodSecurityRestricted dry-runs a Pod made of each rendered Deployment's
// template in a namespace enforcing "restricted": Pod Security admission refuses it if it
// falls short. A pod that does fall short is refused first, so that the check is known to
// be in force.
func TestPodsMeetPodSecurityRestricted(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	dryRun := func(name string, spec corev1.PodSpec) error {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: spec}
		_, err := kube.CoreV1().Pods(namespace).Create(context.Background(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	privileged := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}
	if err := dryRun("not-restricted", privileged); !apierrors.IsForbidden(err) {
		t.Fatalf("a pod without a restricted security context: %v, want Forbidden by Pod Security admission", err)
	}
	for _, name := range renderings(t) {
		r := read(t, name)
		for _, obj := range r.objects {
			if obj.GetKind() != "Deployment" {
				continue
			}
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &d); err != nil {
				t.Fatal(err)
			}
			if err := dryRun(d.Name, d.Spec.Template.Spec); err != nil {
				var status apierrors.APIStatus
				if errors.As(err, &status) {
					err = fmt.Errorf("%s", status.Status().Message)
				}
				t.Errorf("%s: Deployment %s's pod: %v", name, d.Name, err)
			}
		}
	}
}

// engine is what a rendering says about the engine, for comparing renderings.
type engine struct {
	deployment appsv1.Deployment
	container  corev1.Container
	pdb        policyv1.PodDisruptionBudget
	leaseRole  rbacv1.Role
}

func readEngine(t *testing.T, r *rendering) *engine {
	t.Helper()
	e := &engine{}
	r.one(t, "Deployment", "metascript", &e.deployment)
	r.one(t, "PodDisruptionBudget", "metascript", &e.pdb)
	r.one(t, "Role", "metascript-leader-election", &e.leaseRole)
	if n := len(e.deployment.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("%s: the Deployment has %d containers, want 1", r.file, n)
	}
	e.container = e.deployment.Spec.Template.Spec.Containers[0]
	return e
}

// TestModes checks each mode's choices in both renderings (so that a choice wrong in both
// the same way still fails), then that kustomize and Helm agree on everything else that
// decides how the engine runs: replicas, strategy, args, image, ports, probes, security
// contexts, resources, grace period, anti-affinity, the PDB, and every Role's rules.
func TestModes(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			k, h := read(t, "kustomize-"+mode+".yaml"), read(t, "helm-"+mode+".yaml")
			ke, he := readEngine(t, k), readEngine(t, h)
			for _, e := range []struct {
				file string
				*engine
			}{{k.file, ke}, {h.file, he}} {
				checkMode(t, e.file, mode, e.engine)
			}

			same := func(what string, a, b any) {
				t.Helper()
				if !equality.Semantic.DeepEqual(a, b) {
					t.Errorf("%s: kustomize and helm disagree:\nkustomize: %+v\nhelm:      %+v", what, a, b)
				}
			}
			kd, hd := ke.deployment.Spec, he.deployment.Spec
			same("replicas", kd.Replicas, hd.Replicas)
			same("strategy", kd.Strategy, hd.Strategy)
			same("args", ke.container.Args, he.container.Args)
			same("image", ke.container.Image, he.container.Image)
			same("ports", ke.container.Ports, he.container.Ports)
			same("liveness probe", ke.container.LivenessProbe, he.container.LivenessProbe)
			same("readiness probe", ke.container.ReadinessProbe, he.container.ReadinessProbe)
			same("container securityContext", ke.container.SecurityContext, he.container.SecurityContext)
			same("pod securityContext", kd.Template.Spec.SecurityContext, hd.Template.Spec.SecurityContext)
			same("resources", ke.container.Resources, he.container.Resources)
			same("terminationGracePeriodSeconds", kd.Template.Spec.TerminationGracePeriodSeconds, hd.Template.Spec.TerminationGracePeriodSeconds)
			same("anti-affinity", antiAffinity(kd.Template.Spec.Affinity), antiAffinity(hd.Template.Spec.Affinity))
			same("PDB maxUnavailable", ke.pdb.Spec.MaxUnavailable, he.pdb.Spec.MaxUnavailable)
			same("PDB unhealthyPodEvictionPolicy", ke.pdb.Spec.UnhealthyPodEvictionPolicy, he.pdb.Spec.UnhealthyPodEvictionPolicy)

			// Every (Cluster)Role, by name: the chart's RBAC must not drift from the manifests'.
			for _, kind := range []string{"ClusterRole", "Role"} {
				var names []string
				for _, o := range k.objects {
					if o.GetKind() == kind {
						names = append(names, o.GetName())
					}
				}
				if len(names) == 0 {
					t.Errorf("%s: no %s", k.file, kind)
				}
				for _, name := range names {
					var kr, hr rbacv1.ClusterRole // a Role's rules decode the same way
					k.one(t, kind, name, &kr)
					h.one(t, kind, name, &hr)
					same(kind+" "+name+" rules", kr.Rules, hr.Rules)
				}
			}
		})
	}
}

// checkMode checks what makes a mode that mode.
func checkMode(t *testing.T, file, mode string, e *engine) {
	t.Helper()
	want := map[string]struct {
		replicas  int32
		strategy  appsv1.DeploymentStrategyType
		readiness string
		sharding  bool
	}{
		"single":  {1, appsv1.RecreateDeploymentStrategyType, "/readyz", false},
		"ha":      {2, appsv1.RollingUpdateDeploymentStrategyType, "/readyz?exclude=leader", false},
		"sharded": {3, appsv1.RollingUpdateDeploymentStrategyType, "/readyz", true},
	}[mode]
	d := e.deployment.Spec
	if d.Replicas == nil || *d.Replicas != want.replicas {
		t.Errorf("%s: replicas %v, want %d", file, d.Replicas, want.replicas)
	}
	if d.Strategy.Type != want.strategy {
		t.Errorf("%s: strategy %s, want %s", file, d.Strategy.Type, want.strategy)
	}
	if ru := d.Strategy.RollingUpdate; want.strategy == appsv1.RollingUpdateDeploymentStrategyType &&
		(ru == nil || ru.MaxSurge.String() != "1" || ru.MaxUnavailable.String() != "0") {
		t.Errorf("%s: rolling update %+v, want maxSurge 1 and maxUnavailable 0", file, ru)
	}
	if p := e.container.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want.readiness || p.HTTPGet.Port.String() != "health" {
		t.Errorf("%s: readiness probe %+v, want GET %s on the health port", file, p, want.readiness)
	}
	if p := e.container.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
		t.Errorf("%s: liveness probe %+v, want GET /healthz", file, p)
	}
	if got := slices.Contains(e.container.Args, "--sharding"); got != want.sharding || e.container.Args[0] != "run" {
		t.Errorf("%s: args %v: want run first, --sharding %v", file, e.container.Args, want.sharding)
	}
	if mu := e.pdb.Spec.MaxUnavailable; mu == nil || mu.String() != "1" {
		t.Errorf("%s: PDB maxUnavailable %v, want 1", file, mu)
	}
	if mode != "single" && antiAffinity(e.deployment.Spec.Template.Spec.Affinity) == nil {
		t.Errorf("%s: no preferred pod anti-affinity across nodes", file)
	}
	var verbs []string
	for _, r := range e.leaseRole.Rules {
		if slices.Contains(r.Resources, "leases") {
			verbs = append(verbs, r.Verbs...)
		}
	}
	wantVerbs := []string{"get", "create", "update"}
	if want.sharding {
		// Ring members list and watch one another's Leases; a leaving member deletes its own.
		wantVerbs = append(wantVerbs, "list", "watch", "delete")
	}
	for _, v := range wantVerbs {
		if !slices.Contains(verbs, v) {
			t.Errorf("%s: the leader-election Role allows %v on leases, want %s too", file, verbs, v)
		}
	}
	if len(verbs) != len(wantVerbs) {
		t.Errorf("%s: the leader-election Role allows %v on leases, want exactly %v", file, verbs, wantVerbs)
	}
}

// antiAffinity is the preferred pod anti-affinity's weights and topology keys (the label
// selectors differ: Helm's adds the release's instance label).
func antiAffinity(a *corev1.Affinity) []string {
	if a == nil || a.PodAntiAffinity == nil {
		return nil
	}
	var out []string
	for _, term := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		out = append(out, fmt.Sprintf("%d %s", term.Weight, term.PodAffinityTerm.TopologyKey))
	}
	return out
}
