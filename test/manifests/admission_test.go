package manifests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/engine/kinds"
)

// admissionManifests are the documents of manifests/admission, decoded strictly into their
// types: a misspelt field fails the test instead of being dropped.
type admissionManifests struct {
	kustomization  kustomization
	files          []string
	serviceAccount corev1.ServiceAccount
	role           rbacv1.ClusterRole
	binding        rbacv1.ClusterRoleBinding
	deployment     appsv1.Deployment
	service        corev1.Service
	webhook        admissionregistrationv1.ValidatingWebhookConfiguration
}

func readAdmissionManifests(t *testing.T) *admissionManifests {
	t.Helper()
	dir := filepath.Join(root, "manifests", "admission")
	m := &admissionManifests{}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &m.kustomization); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range m.kustomization.Resources {
		file := filepath.Join(dir, r)
		m.files = append(m.files, file)
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			var meta struct{ Kind string }
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				t.Fatalf("%s: %v", r, err)
			}
			into := map[string]any{
				"ServiceAccount": &m.serviceAccount, "ClusterRole": &m.role, "ClusterRoleBinding": &m.binding,
				"Deployment": &m.deployment, "Service": &m.service, "ValidatingWebhookConfiguration": &m.webhook,
			}[meta.Kind]
			if into == nil {
				t.Fatalf("%s: unexpected kind %q", r, meta.Kind)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
				t.Fatalf("%s: %s: %v", r, meta.Kind, err)
			}
			seen[meta.Kind]++
		}
	}
	for _, k := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "ValidatingWebhookConfiguration"} {
		if seen[k] != 1 {
			t.Errorf("manifests/admission has %d %s, want 1", seen[k], k)
		}
	}
	return m
}

// TestAdmissionKustomizationListsEveryManifest: manifests/admission is a kustomization of
// its own, kept out of the engine's (the webhook is optional), listing every file there.
func TestAdmissionKustomizationListsEveryManifest(t *testing.T) {
	m := readAdmissionManifests(t)
	files, _ := filepath.Glob(filepath.Join(root, "manifests", "admission", "*.yaml"))
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" && !slices.Contains(m.files, f) {
			t.Errorf("manifests/admission/%s is not listed in its kustomization.yaml", filepath.Base(f))
		}
	}
	engine, err := kustomizationResources()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range engine {
		if strings.HasPrefix(f, filepath.Join(root, "manifests", "admission")+string(filepath.Separator)) {
			t.Errorf("manifests/kustomization.yaml installs %s: the webhook is optional", f)
		}
	}
}

// TestAdmissionManifestsAgree: the names, ports, paths and files the manifests refer to
// one another by, and the resources the webhook is sent: every kind's, no subresource.
func TestAdmissionManifestsAgree(t *testing.T) {
	m := readAdmissionManifests(t)
	pod := m.deployment.Spec.Template.Spec
	if pod.ServiceAccountName != m.serviceAccount.Name || m.deployment.Namespace != m.serviceAccount.Namespace {
		t.Errorf("Deployment runs as %s/%s, the ServiceAccount is %s/%s", m.deployment.Namespace, pod.ServiceAccountName,
			m.serviceAccount.Namespace, m.serviceAccount.Name)
	}
	if s := m.binding.Subjects; len(s) != 1 || s[0].Name != m.serviceAccount.Name || s[0].Namespace != m.serviceAccount.Namespace ||
		m.binding.RoleRef.Name != m.role.Name {
		t.Errorf("ClusterRoleBinding %+v does not bind %s to %s", m.binding, m.serviceAccount.Name, m.role.Name)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	flags := map[string]string{}
	for _, a := range c.Args[1:] {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		flags[name] = value
	}
	if c.Args[0] != "admission" {
		t.Errorf("args = %v, want `admission` first", c.Args)
	}
	var engine appsv1.Deployment
	data, err := os.ReadFile(filepath.Join(root, "manifests", "base", "engine", "deployment.yaml"))
	if err == nil {
		err = yaml.Unmarshal(data, &engine)
	}
	if err != nil || len(engine.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("the engine's Deployment: %v", err)
	}
	if want := engine.Spec.Template.Spec.Containers[0].Image; c.Image != want {
		t.Errorf("image %s, the engine's is %s", c.Image, want)
	}
	image, _, _ := strings.Cut(c.Image, ":")
	if k := m.kustomization.Images; len(k) != 1 || k[0].Name != image {
		t.Errorf("kustomization images = %+v, want one entry named %s", k, image)
	}
	var port corev1.ContainerPort
	for _, p := range c.Ports {
		if p.Name == "https" {
			port = p
		}
	}
	if fmt.Sprintf(":%d", port.ContainerPort) != flags["listen"] {
		t.Errorf("port https = %d, --listen=%s", port.ContainerPort, flags["listen"])
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
	}{{"liveness", c.LivenessProbe}, {"readiness", c.ReadinessProbe}} {
		if g := p.probe; g == nil || g.HTTPGet == nil || g.HTTPGet.Path != "/healthz" || g.HTTPGet.Port.String() != "https" ||
			g.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("%s probe = %+v, want GET /healthz over HTTPS on port https", p.name, p.probe)
		}
	}
	// The certificate files are in the mounted Secret.
	mounts := map[string]string{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.Name] = vm.MountPath
	}
	secret := ""
	for _, v := range pod.Volumes {
		if v.Secret != nil && mounts[v.Name] != "" {
			for _, f := range []string{"tls-cert-file", "tls-private-key-file"} {
				if filepath.Dir(flags[f]) != mounts[v.Name] {
					t.Errorf("--%s=%s is not in the Secret volume mounted at %s", f, flags[f], mounts[v.Name])
				}
			}
			secret = v.Secret.SecretName
		}
	}
	if secret != "metascript-admission-tls" || flags["tls-cert-file"] != "/tls/tls.crt" || flags["tls-private-key-file"] != "/tls/tls.key" {
		t.Errorf("serving certificate from Secret %q (%s, %s), want metascript-admission-tls's tls.crt and tls.key as documented",
			secret, flags["tls-cert-file"], flags["tls-private-key-file"])
	}
	// Service → pods.
	for k, v := range m.service.Spec.Selector {
		if pod := m.deployment.Spec.Template.Labels; pod[k] != v {
			t.Errorf("Service selects %s=%s, the pods are labelled %v", k, v, pod)
		}
	}
	if len(m.service.Spec.Ports) != 1 || m.service.Spec.Ports[0].TargetPort.String() != "https" {
		t.Fatalf("Service ports = %+v, want one, to port https", m.service.Spec.Ports)
	}
	// Webhook → Service.
	if len(m.webhook.Webhooks) != 1 {
		t.Fatalf("%d webhooks, want 1", len(m.webhook.Webhooks))
	}
	w := m.webhook.Webhooks[0]
	svc := w.ClientConfig.Service
	if svc == nil || svc.Name != m.service.Name || svc.Namespace != m.service.Namespace || svc.Path == nil || *svc.Path != "/validate" ||
		svc.Port == nil || *svc.Port != m.service.Spec.Ports[0].Port {
		t.Errorf("clientConfig.service = %+v, want %s/%s port %d path /validate", svc, m.service.Namespace, m.service.Name, m.service.Spec.Ports[0].Port)
	}
	if want := m.service.Namespace + "/metascript-admission"; m.webhook.Annotations["cert-manager.io/inject-ca-from"] != want {
		t.Errorf("cert-manager.io/inject-ca-from = %q, want %q (the documented Certificate)", m.webhook.Annotations["cert-manager.io/inject-ca-from"], want)
	}
	if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Fail || w.TimeoutSeconds == nil || *w.TimeoutSeconds > 10 ||
		w.SideEffects == nil || *w.SideEffects != admissionregistrationv1.SideEffectClassNone || !slices.Equal(w.AdmissionReviewVersions, []string{"v1"}) {
		t.Errorf("webhook %s: failurePolicy %v, timeoutSeconds %v, sideEffects %v, admissionReviewVersions %v; want Fail, at most 10, None, [v1]",
			w.Name, w.FailurePolicy, w.TimeoutSeconds, w.SideEffects, w.AdmissionReviewVersions)
	}
	var resources []string
	for _, r := range w.Rules {
		if !slices.Equal(r.Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}) {
			t.Errorf("rule %+v: operations %v, want CREATE and UPDATE only", r, r.Operations)
		}
		for _, d := range kinds.All {
			if slices.Contains(r.Resources, d.Resource.Resource) && (!slices.Equal(r.APIGroups, []string{d.Resource.Group}) ||
				!slices.Equal(r.APIVersions, []string{d.Resource.Version})) {
				t.Errorf("rule %+v: want apiGroups [%s] and apiVersions [%s] for %s", r, d.Resource.Group, d.Resource.Version, d.Resource.Resource)
			}
		}
		resources = append(resources, r.Resources...)
	}
	var want []string
	for _, d := range kinds.All {
		want = append(want, d.Resource.Resource)
	}
	slices.Sort(resources)
	slices.Sort(want)
	if !slices.Equal(resources, want) {
		t.Errorf("the webhook is sent %v, want every kind's resource (no subresource): %v", resources, want)
	}
}

// TestAdmissionManifestsApply: the API server accepts every document (a dry run: the
// webhook configuration would route controllers to a Service that does not run here).
func TestAdmissionManifestsApply(t *testing.T) {
	m := readAdmissionManifests(t)
	if err := applyFiles(env.ControlPlane.Config, true, m.files...); err != nil {
		t.Fatal(err)
	}
}

// TestAdmissionAccountMayDoWhatTheWebhookDoes applies the webhook's ServiceAccount and RBAC
// and asks the API server whether that account may make each request the webhook makes:
// discovery, and the SubjectAccessReviews of --check-service-accounts, which its Deployment
// leaves on.
func TestAdmissionAccountMayDoWhatTheWebhookDoes(t *testing.T) {
	m := readAdmissionManifests(t)
	dir := filepath.Join(root, "manifests", "admission")
	if err := applyFiles(env.ControlPlane.Config, false, filepath.Join(dir, "serviceaccount.yaml"), filepath.Join(dir, "rbac.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, a := range m.deployment.Spec.Template.Spec.Containers[0].Args {
		if a == "--check-service-accounts=false" {
			t.Errorf("the Deployment turns the account checks off: %v", a)
		}
	}
	user := serviceAccountUser(m.serviceAccount.Name)
	for _, attrs := range []authorizationv1.SubjectAccessReviewSpec{
		{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}},
		{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/apis/metascript.dev/v1alpha1"}},
		{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/api/v1"}},
	} {
		attrs.User, attrs.Groups = user.UserName, user.Groups
		review, err := env.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(),
			&authorizationv1.SubjectAccessReview{Spec: attrs}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !review.Status.Allowed {
			t.Errorf("%s may not %+v %+v: %s", user.UserName, attrs.ResourceAttributes, attrs.NonResourceAttributes, review.Status.Reason)
		}
	}
}
