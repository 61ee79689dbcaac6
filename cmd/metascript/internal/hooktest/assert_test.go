package hooktest

import (
	"strings"
	"testing"

	"metascript.dev/metascript/cmd/metascript/internal/manifest"
)

func TestAssertions(t *testing.T) {
	resp := map[string]any{
		"children": []any{
			map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "web-a", "labels": map[string]any{"app": "web", "tier": "fe"}}},
			map[string]any{"kind": "Secret", "metadata": map[string]any{"name": "web-b"}},
		},
		"status": map[string]any{"ready": true, "phase": nil, "replicas": int64(3), "msg": "héllo"},
		// Integral numbers as floats, as a Starlark hook returns 3.0 or a webhook answers 3.0.
		"scale":     map[string]any{"replicas": float64(3), "steps": []any{float64(1), 2.5}},
		"finalized": false,
	}
	tests := []struct {
		assertion string // one YAML flow mapping
		wantErr   string // empty: the assertion holds
	}{
		{`{path: "children[0].metadata.name", equals: web-a}`, ""},
		{`{path: status.replicas, equals: 3.0}`, ""},
		{`{path: scale.replicas, equals: 3}`, ""},
		{`{path: scale.replicas, equals: 4}`, `scale.replicas: want 4, got 3`},
		{`{path: scale.steps, equals: [1, 2.5]}`, ""},
		{`{path: scale.steps, contains: 1}`, ""},
		{`{path: scale, contains: {replicas: 3}}`, ""},
		{`{path: status.phase, equals: null}`, ""},
		{`{path: status.ready, equals: "true"}`, `status.ready: want "true", got true`},
		{`{path: status.gone, equals: null}`, `status.gone: status has no field gone`},
		{`{path: status.phase, exists: true}`, ""},
		{`{path: status.gone, exists: false}`, ""},
		{`{path: "children[1].metadata.labels", exists: true}`, `children[1].metadata.labels: want it to exist, but children[1].metadata has no field labels`},
		{`{path: finalized, exists: false}`, `finalized: want it absent, got false`},
		{`{path: children, length: 2}`, ""},
		{`{path: "children[0].metadata.labels", length: 2}`, ""},
		{`{path: status.msg, length: 5}`, ""},
		{`{path: children, length: 3}`, `children: want length 3, got 2`},
		{`{path: status.ready, length: 1}`, `status.ready: want length 1, but it is a boolean true`},
		{`{path: status.msg, contains: éll}`, ""},
		{`{path: status.msg, contains: bye}`, `status.msg: "héllo" does not contain "bye"`},
		{`{path: "children[0].metadata.labels", contains: {app: web}}`, ""},
		{`{path: "children[0].metadata.labels", contains: {app: db}}`, `want app: "db"`},
		{`{path: "children[0].metadata.labels", contains: web}`, `is an object; contains needs an object`},
		{`{path: children, contains: {kind: Secret, metadata: {name: web-b}}}`, ""},
		{`{path: children, contains: {kind: Secret}}`, `children: no item equals {"kind":"Secret"}`},
		{`{path: status.replicas, contains: 3}`, `contains needs a string, list or object`},
		{`{path: "children[1].metadata.name", matches: "^web-[ab]$"}`, ""},
		{`{path: "children[1].metadata.name", matches: "^db"}`, `"web-b" does not match "^db"`},
		{`{path: status.replicas, matches: "3"}`, `want a string matching "3", got 3`},
		{`{path: "", length: 4}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.assertion, func(t *testing.T) {
			var a Assertion
			if err := manifest.DecodeStrict([]byte(tt.assertion), &a); err != nil {
				t.Fatal(err)
			}
			if err := a.compile(); err != nil {
				t.Fatal(err)
			}
			err := a.Check(resp)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("want it to hold, got %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestAssertionCompileErrors(t *testing.T) {
	tests := map[string]string{
		`{path: a}`:                       "exactly one of equals, exists, length, contains or matches must be set, got 0",
		`{path: a, equals: 1, length: 1}`: "got 2 (equals, length)",
		`{path: a, matches: "("}`:         "matches: error parsing regexp",
		`{path: "a[", exists: true}`:      "unclosed [",
		`{path: a, exist: true}`:          "unknown field exist",
	}
	for src, want := range tests {
		t.Run(src, func(t *testing.T) {
			var a Assertion
			err := manifest.DecodeStrict([]byte(src), &a)
			if err == nil {
				err = a.compile()
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v, want one containing %q", err, want)
			}
		})
	}
}
