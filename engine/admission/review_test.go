package admission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/kinds"
	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/scripting"
)

// ceilings are the engine's default ceilings (metascript run's flags).
var ceilings = scripting.Budget{Timeout: 30e9, MaxSteps: 1_000_000_000, MaxStackDepth: 1000, MaxMemory: 512 << 20}

// servedResources is what fakeDiscovery serves: name → namespaced.
var servedResources = map[string]bool{"bundles": true, "copies": true, "configmaps": true, "namespaces": false}

type fakeDiscovery struct{}

func (fakeDiscovery) Resolve(apiVersion, resource string) (resources.Resource, error) {
	if resource == "unreachable" {
		return resources.Resource{}, fmt.Errorf("discovering %s: %w", apiVersion,
			&url.Error{Op: "Get", URL: "https://apiserver/apis/" + apiVersion, Err: errors.New("connection refused")})
	}
	namespaced, ok := servedResources[resource]
	if !ok {
		return resources.Resource{}, &resources.NotFoundError{APIVersion: apiVersion, Resource: resource}
	}
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return resources.Resource{GVR: gv.WithResource(resource), GVK: gv.WithKind(resource), Namespaced: namespaced}, nil
}

// fixtures returns the documents of testdata/name, as JSON objects.
func fixtures(t testing.TB, name string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, obj)
	}
	return out
}

// review posts an AdmissionReview of obj to a server running h and returns its response.
func review(t *testing.T, srv *httptest.Server, op admissionv1.Operation, obj map[string]any, subresource string) *admissionv1.AdmissionResponse {
	t.Helper()
	return reviewUpdate(t, srv, op, nil, obj, subresource)
}

// reviewUpdate is review with an old object (nil: none).
func reviewUpdate(t *testing.T, srv *httptest.Server, op admissionv1.Operation, old, obj map[string]any, subresource string) *admissionv1.AdmissionResponse {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var oldRaw []byte
	if old != nil {
		if oldRaw, err = json.Marshal(old); err != nil {
			t.Fatal(err)
		}
	}
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	gvk := schema.FromAPIVersionAndKind(fmt.Sprint(obj["apiVersion"]), fmt.Sprint(obj["kind"]))
	in := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID("uid-" + name), Kind: metav1.GroupVersionKind(gvk),
			Name: name, Namespace: ns, Operation: op, SubResource: subresource, Object: runtime.RawExtension{Raw: raw},
			OldObject: runtime.RawExtension{Raw: oldRaw}},
	}
	body, _ := json.Marshal(in)
	resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %s", resp.Status)
	}
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil || out.Response.UID != in.Request.UID {
		t.Fatalf("response %+v does not answer request %s", out.Response, in.Request.UID)
	}
	return out.Response
}

func newServer(t *testing.T, discovery bool) *httptest.Server {
	opts := Options{Compiler: engine.NewRuntime(scripting.Options{}), Ceilings: &ceilings}
	if discovery {
		opts.Resolver = fakeDiscovery{}
	}
	srv := httptest.NewServer(&Handler{Options: opts})
	t.Cleanup(srv.Close)
	return srv
}

func TestEveryValidKindIsAllowed(t *testing.T) {
	seen := map[string]bool{}
	for _, discovery := range []bool{false, true} {
		srv := newServer(t, discovery)
		for _, obj := range fixtures(t, "valid.yaml") {
			kind := obj["kind"].(string)
			seen[kind] = true
			for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
				if resp := review(t, srv, op, obj, ""); !resp.Allowed {
					t.Errorf("discovery %v, %s %s: denied: %s", discovery, op, kind, resp.Result.Message)
				}
			}
		}
	}
	for _, k := range kinds.Names() {
		if !seen[k] {
			t.Errorf("testdata/valid.yaml has no %s", k)
		}
	}
}

func TestRefused(t *testing.T) {
	tests := []struct {
		file      string
		discovery bool
		// want are the problems, in order, as the message words them.
		want []string
		// fields are the causes' fields, in order.
		fields []string
	}{
		{file: "compile-error.yaml",
			want: []string{`spec.hooks.sync.starlark.source: 3:1: got outdent, want '}'`,
				`spec.hooks.finalize.javascript.source: 1:1: no top-level function "finalize" (defined: [other])`},
			fields: []string{"spec.hooks.sync.starlark.source", "spec.hooks.finalize.javascript.source"}},
		{file: "over-ceiling.yaml",
			want: []string{"spec.hooks.map.budget.timeout: 1h0m0s exceeds the engine's ceiling 30s",
				"spec.hooks.map.budget.maxMemory: 2Gi exceeds the engine's ceiling 512Mi"},
			fields: []string{"spec.hooks.map.budget.timeout", "spec.hooks.map.budget.maxMemory"}},
		{file: "other-namespace.yaml",
			want: []string{`spec.serviceAccount.namespace: "kube-system" is not the controller's namespace "team-a"`,
				`spec.hooks.sync.starlark.configMapRef.namespace: ConfigMap team-b/hooks: a namespaced controller refers to objects of its own namespace "team-a" only`,
				`spec.endpointConfigs[0].basicAuth.secretRef.namespace: Secret kube-system/credentials: a namespaced controller refers to objects of its own namespace "team-a" only`},
			fields: []string{"spec.serviceAccount.namespace", "spec.hooks.sync.starlark.configMapRef.namespace",
				"spec.endpointConfigs[0].basicAuth.secretRef.namespace"}},
		{file: "malformed.yaml",
			want:   []string{"unknown field spec.hooks.sync.starlark.sourc"},
			fields: []string{""}},
		{file: "cluster-scoped-child.yaml", discovery: true,
			want:   []string{"spec.childResources[0]: namespaces is cluster-scoped and the parent resource bundles (spec.parentResource) is namespaced: a NamespacedCompositeController is confined to its namespace"},
			fields: []string{"spec.childResources[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			srv := newServer(t, tt.discovery)
			obj := fixtures(t, tt.file)[0]
			resp := review(t, srv, admissionv1.Update, obj, "")
			if resp.Allowed {
				t.Fatal("allowed")
			}
			if resp.Result == nil || resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Reason != metav1.StatusReasonInvalid {
				t.Fatalf("result %+v, want 422 Invalid", resp.Result)
			}
			msg := resp.Result.Message
			last := -1
			for _, w := range tt.want {
				i := strings.Index(msg, w)
				if i < 0 || i < last {
					t.Errorf("message %q\nlacks, after the problems before it: %q", msg, w)
				}
				last = i
			}
			var fields []string
			for _, c := range resp.Result.Details.Causes {
				fields = append(fields, c.Field)
			}
			if strings.Join(fields, ",") != strings.Join(tt.fields, ",") {
				t.Errorf("cause fields %q, want %q", fields, tt.fields)
			}
		})
	}
}

// TestOutOfScopeIsAllowed: what the webhook configuration should not send is let through, not
// judged: a status update, a DELETE, an update of metadata only, a resource of another kind.
func TestOutOfScopeIsAllowed(t *testing.T) {
	srv := newServer(t, false)
	broken := fixtures(t, "compile-error.yaml")[0]
	if resp := review(t, srv, admissionv1.Update, broken, "status"); !resp.Allowed {
		t.Errorf("status update denied: %s", resp.Result.Message)
	}
	if resp := review(t, srv, admissionv1.Delete, broken, ""); !resp.Allowed {
		t.Errorf("DELETE denied: %s", resp.Result.Message)
	}
	// A label added to a controller admitted before the webhook was.
	labelled := fixtures(t, "compile-error.yaml")[0]
	labelled["metadata"].(map[string]any)["labels"] = map[string]any{"team": "a"}
	if resp := reviewUpdate(t, srv, admissionv1.Update, broken, labelled, ""); !resp.Allowed {
		t.Errorf("metadata-only update denied: %s", resp.Result.Message)
	}
	// The same with the spec changed is judged.
	edited := fixtures(t, "compile-error.yaml")[0]
	edited["spec"].(map[string]any)["resyncPeriodSeconds"] = int64(30)
	if resp := reviewUpdate(t, srv, admissionv1.Update, broken, edited, ""); resp.Allowed {
		t.Error("spec update of a broken controller allowed")
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "a"}}
	resp := review(t, srv, admissionv1.Create, cm, "")
	if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "controller resources only") {
		t.Errorf("ConfigMap: allowed %v, warnings %q; want allowed with a warning", resp.Allowed, resp.Warnings)
	}
}

func TestMalformedReviews(t *testing.T) {
	srv := newServer(t, false)
	for _, tt := range []struct{ name, body, want string }{
		{"not JSON", "{", "decoding the AdmissionReview"},
		{"no request", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, "no request"},
	} {
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b.String(), tt.want) {
			t.Errorf("%s: %s %q, want 400 and %q", tt.name, resp.Status, b.String(), tt.want)
		}
	}
	// An object of a controller kind that is not an object at all.
	in := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"metascript.dev","version":"v1alpha1","kind":"MapController"},"name":"m","operation":"CREATE","object":["a list"]}}`
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil || out.Response.Allowed || !strings.Contains(out.Response.Result.Message, "not a JSON object") {
		t.Errorf("response %+v, want denied: not a JSON object", out.Response)
	}
}

// TestDiscoveryFailureIsNoProblem: a controller is not refused because discovery failed; the
// engine checks its resources again when it builds it.
func TestDiscoveryFailureIsNoProblem(t *testing.T) {
	srv := newServer(t, true)
	obj := fixtures(t, "cluster-scoped-child.yaml")[0]
	obj["spec"].(map[string]any)["childResources"] = []any{map[string]any{"apiVersion": "v1", "resource": "unreachable"}}
	if resp := review(t, srv, admissionv1.Create, obj, ""); !resp.Allowed {
		t.Errorf("denied: %s", resp.Result.Message)
	}
}
