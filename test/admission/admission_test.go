// Package admission runs `metascript admission`'s handler behind a real kube-apiserver: the
// shipped ValidatingWebhookConfiguration, pointed at the handler on loopback, makes the API
// server refuse a controller the engine would refuse, with the located message.
package admission

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/admission"
	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/test/controlplane"
	"metascript.dev/metascript/test/enginetest"
	"metascript.dev/metascript/test/tlstest"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { controlplane.RunTests(m, &cp) }

// shippedWebhook is manifests/admission's ValidatingWebhookConfiguration, its clientConfig
// pointed at url with caBundle instead of the in-cluster Service.
func shippedWebhook(t *testing.T, url string, caBundle []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "manifests", "admission", "validatingwebhookconfiguration.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Webhooks {
		cfg.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
	}
	return &cfg
}

func controllers(t *testing.T) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, u := range enginetest.ObjectsFromFile(t, filepath.Join("testdata", "controllers.yaml")) {
		out[u.GetName()] = u
	}
	return out
}

// serveShipped serves `metascript admission`'s handler, with discovery and account checks
// as its Deployment runs it, behind the shipped webhook configuration, and returns once the
// API server sends it reviews. The configuration is deleted when the test ends.
func serveShipped(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	srv, caPEM := tlstest.Serve(t, &admission.Handler{Options: admission.Options{
		Compiler: engine.NewRuntime(scripting.Options{}), Resolver: resources.NewResolver(kube.Discovery())},
		Accounts: kube.AuthorizationV1().SubjectAccessReviews()})
	cfg, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx,
		shippedWebhook(t, srv.URL+"/validate", caPEM), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, cfg.Name, metav1.DeleteOptions{})
	})
	// The configuration takes effect once the API server's webhook informer has it: probe
	// with a dry run of the broken controller (sideEffects: None lets dry runs through)
	// until it is refused.
	broken := controllers(t)["broken"]
	enginetest.Eventually(t, 30*time.Second, func() (bool, string) {
		err := create(cp.Config, broken, true)
		return err != nil && strings.Contains(err.Error(), located), fmt.Sprintf("dry run: %v", err)
	})
}

// located is where the broken controller's syntax error is.
const located = "spec.hooks.sync.starlark.source: 2:25:"

// resource is where controller resource u is served.
func resource(cfg *rest.Config, u *unstructured.Unstructured) dynamic.ResourceInterface {
	r := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1",
		Resource: strings.ToLower(u.GetKind()) + "s"})
	if ns := u.GetNamespace(); ns != "" {
		return r.Namespace(ns)
	}
	return r
}

// create creates u as cfg's user, or only tries to with dryRun.
func create(cfg *rest.Config, u *unstructured.Unstructured, dryRun bool) error {
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err := resource(cfg, u).Create(context.Background(), u.DeepCopy(), opts)
	return err
}

func TestAPIServerRefusesWhatTheEngineWould(t *testing.T) {
	ctx := context.Background()
	serveShipped(t)
	cs := controllers(t)
	gvr := func(u *unstructured.Unstructured) dynamic.ResourceInterface { return resource(cp.Config, u) }

	err := create(cp.Config, cs["broken"], false)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), located) ||
		!strings.Contains(err.Error(), `admission webhook "controllers.admission.metascript.dev" denied the request`) {
		t.Errorf("creating the broken controller: %v; want 422 Invalid from the webhook, located at %s", err, located)
	}
	if _, err := gvr(cs["broken"]).Get(ctx, "broken", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the broken controller exists: get = %v", err)
	}

	if err := create(cp.Config, cs["good"], false); err != nil {
		t.Fatalf("creating the good controller: %v", err)
	}
	t.Cleanup(func() { gvr(cs["good"]).Delete(ctx, "good", metav1.DeleteOptions{}) })

	// Editing it into the broken one is refused too (UPDATE).
	good, err := gvr(cs["good"]).Get(ctx, "good", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good.Object["spec"] = cs["broken"].Object["spec"]
	if _, err := gvr(good).Update(ctx, good, metav1.UpdateOptions{}); !strings.Contains(fmt.Sprint(err), located) {
		t.Errorf("updating the good controller with a broken hook: %v; want refused at %s", err, located)
	}

	err = create(cp.Config, cs["escape"], false)
	const scoped = "spec.childResources[0]: namespaces is cluster-scoped"
	if !strings.Contains(fmt.Sprint(err), scoped) {
		t.Errorf("creating a namespaced controller of a cluster-scoped child: %v; want refused: %s", err, scoped)
	}
}
