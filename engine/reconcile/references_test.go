package reconcile

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/hooks"
)

// readRecorder is a hooks.SourceResolver and SecretReader that records the one object a
// build asks for and refuses it, so that the build stops there.
type readRecorder struct{ read []string }

var errRecorded = errors.New("recorded")

func (r *readRecorder) ConfigMapKey(_ context.Context, ref v1alpha1.ConfigMapKeyRef) (string, error) {
	r.read = append(r.read, fmt.Sprintf("ConfigMap %s/%s", ref.Namespace, ref.Name))
	return "", errRecorded
}

func (r *readRecorder) SecretKey(_ context.Context, ref v1alpha1.SecretKeyRef) ([]byte, error) {
	r.read = append(r.read, fmt.Sprintf("Secret %s/%s", ref.Namespace, ref.Name))
	return nil, errRecorded
}

// TestReferencesNameWhatBuildsRead: for each way a spec names a ConfigMap or Secret,
// References lists it at its field, and it is the object hooks.Build reads: the checks the
// manager makes before a build (and admission's namespace rule) cover every read.
func TestReferencesNameWhatBuildsRead(t *testing.T) {
	kind := &Descriptor{Kind: "CompositeController", Hooks: []Hook{{Name: "sync"}, {Name: "finalize"}}}
	hook := `{"url": "https://hook.test/sync", %s}`
	cases := []struct {
		name, spec, field, read string
	}{
		{"starlark source", `{"hooks": {"sync": {"starlark": {"configMapRef": {"namespace": "a", "name": "src", "key": "k"}}}}}`,
			"hooks.sync.starlark.configMapRef", "ConfigMap a/src"},
		{"javascript source", `{"hooks": {"finalize": {"javascript": {"configMapRef": {"namespace": "a", "name": "src", "key": "k"}}}}}`,
			"hooks.finalize.javascript.configMapRef", "ConfigMap a/src"},
		{"shared starlark", `{"hooks": {"sync": {"starlark": {}}}, "script": {"starlark": {"configMapRef": {"namespace": "a", "name": "lib", "key": "k"}}}}`,
			"script.starlark.configMapRef", "ConfigMap a/lib"},
		{"shared javascript", `{"hooks": {"sync": {"javascript": {}}}, "script": {"javascript": {"configMapRef": {"namespace": "a", "name": "lib", "key": "k"}}}}`,
			"script.javascript.configMapRef", "ConfigMap a/lib"},
		{"caBundle secret", fmt.Sprintf(`{"hooks": {"sync": {"webhook": `+hook+`}}}`, `"caBundle": {"secretRef": {"namespace": "a", "name": "ca"}}`),
			"hooks.sync.webhook.caBundle.secretRef", "Secret a/ca"},
		{"caBundle configmap", fmt.Sprintf(`{"hooks": {"sync": {"webhook": `+hook+`}}}`, `"caBundle": {"configMapRef": {"namespace": "a", "name": "ca"}}`),
			"hooks.sync.webhook.caBundle.configMapRef", "ConfigMap a/ca"},
		{"authorization", fmt.Sprintf(`{"hooks": {"sync": {"webhook": `+hook+`}}}`, `"authorization": {"secretRef": {"namespace": "a", "name": "token", "key": "t"}}`),
			"hooks.sync.webhook.authorization.secretRef", "Secret a/token"},
		{"basicAuth", fmt.Sprintf(`{"hooks": {"sync": {"webhook": `+hook+`}}}`, `"basicAuth": {"secretRef": {"namespace": "a", "name": "basic"}}`),
			"hooks.sync.webhook.basicAuth.secretRef", "Secret a/basic"},
		{"clientTLS", fmt.Sprintf(`{"hooks": {"sync": {"webhook": `+hook+`}}}`, `"clientTLS": {"secretRef": {"namespace": "a", "name": "cert"}}`),
			"hooks.sync.webhook.clientTLS.secretRef", "Secret a/cert"},
		{"endpoint config", `{"hooks": {"sync": {"webhook": {"url": "https://hook.test/sync"}}},
			"endpointConfigs": [{"host": "hook.test", "authorization": {"secretRef": {"namespace": "a", "name": "token", "key": "t"}}}]}`,
			"endpointConfigs[0].authorization.secretRef", "Secret a/token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var spec struct {
				Hooks           map[string]*v1alpha1.Hook `json:"hooks"`
				Script          *v1alpha1.SharedScript    `json:"script"`
				EndpointConfigs []v1alpha1.EndpointConfig `json:"endpointConfigs"`
			}
			if err := yaml.UnmarshalStrict([]byte(c.spec), &spec); err != nil {
				t.Fatal(err)
			}
			decl := &Declared{Hooks: spec.Hooks, Script: spec.Script, EndpointConfigs: spec.EndpointConfigs}
			refs := References(kind, decl)
			if len(refs) != 1 || refs[0].Field != c.field || fmt.Sprintf("%s %s/%s", refs[0].Kind, refs[0].Namespace, refs[0].Name) != c.read {
				t.Errorf("References: %+v, want one %s at %s", refs, c.read, c.field)
			}
			rec := &readRecorder{}
			for name, def := range decl.Hooks {
				_, _ = hooks.Build(context.Background(), hooks.Spec{Controller: "test", Hook: name, Def: def, Shared: decl.Script,
					EndpointConfigs: decl.EndpointConfigs}, nil, rec)
			}
			if len(rec.read) != 1 || rec.read[0] != c.read {
				t.Errorf("the build read %v, want %s", rec.read, c.read)
			}
		})
	}
}
