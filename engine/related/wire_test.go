package related

import (
	"testing"

	"metascript.dev/metascript/apis/hooks"
)

// TestWireTypeResponseIsAccepted: customize responses using every field of
// hooks.CustomizeResponse and hooks.RelatedRule are ones the engine accepts.
func TestWireTypeResponseIsAccepted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		parent string
		rule   map[string]any
	}{
		{"names", "ns", map[string]any{"apiVersion": "v1", "resource": "configmaps", "names": []any{"a"}, "namespace": "ns"}},
		{"label selector", "ns", map[string]any{"apiVersion": "v1", "resource": "configmaps",
			"labelSelector": map[string]any{"matchLabels": map[string]any{"x": "y"},
				"matchExpressions": []any{map[string]any{"key": "tier", "operator": "In", "values": []any{"a", "b"}}}}}},
		{"namespace selector", "", map[string]any{"apiVersion": "v1", "resource": "configmaps",
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"team": "web"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := map[string]any{"relatedResources": []any{tc.rule}}
			if err := hooks.Conforms(resp, &hooks.CustomizeResponse{}); err != nil {
				t.Fatal(err)
			}
			if _, err := parseCustomize(resp, parentIn(tc.parent), fakeResolver{}, OwnNamespace); err != nil {
				t.Fatalf("the engine refuses it: %v", err)
			}
		})
	}
}
