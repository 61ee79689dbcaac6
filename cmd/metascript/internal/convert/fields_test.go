package convert

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestUnknownFields(t *testing.T) {
	const doc = `
apiVersion: metascript.dev/v1alpha1
kind: CompositeController
metadata: {name: c, labels: {any: thing}}
spec:
  parentResource: {apiVersion: v1, resource: things, labelSelector: {matchLabels: {a: b}}, extra: 1}
  childResources:
    - {apiVersion: v1, resource: pods}
    - {apiVersion: v1, resource: pods, bogus: true, updateStrategy: {method: InPlace, statusChecks: {conditions: [{type: Ready, nope: x}]}}}
  hooks:
    sync:
      budget: {timeout: 2s, maxMemory: 64Mi}
      webhook: {url: "http://x", timeout: 10s, etag: {enabled: true}, cache: true}
  status: {}
`
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	var got []string
	unknownFields(obj, types["CompositeController"], nil, func(p path) { got = append(got, p.String()) })
	want := []string{
		"spec.childResources[1].bogus",
		"spec.childResources[1].updateStrategy.statusChecks.conditions[0].nope",
		"spec.hooks.sync.webhook.cache",
		"spec.parentResource.extra",
		"spec.status",
	}
	if !slices.Equal(got, want) {
		t.Errorf("unknown fields %q, want %q", got, want)
	}
	var again []string
	unknownFields(obj, types["CompositeController"], nil, func(p path) { again = append(again, p.String()) })
	if len(again) > 0 {
		t.Errorf("unknown fields left after the first walk: %q", again)
	}
}

func TestWhy(t *testing.T) {
	tests := []struct {
		p    path
		want string
	}{
		{path{"spec", "hooks", "preUpdateChild"}, "Metascript calls no hook around the update of a child"},
		{path{"spec", "hooks", "sync", "etag"}, "Metascript's DecoratorController has no such field"},
		{path{"spec", "resyncPeriod"}, "Metascript's DecoratorController has no such field"},
	}
	for _, tt := range tests {
		if got := why("DecoratorController", tt.p); !strings.Contains(got, tt.want) {
			t.Errorf("why(%s) = %q, want it to say %q", tt.p, got, tt.want)
		}
	}
}
