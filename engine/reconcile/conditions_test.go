package reconcile

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestStatusWithConditions(t *testing.T) {
	const then, nowText = "2020-01-01T00:00:00Z", "2025-06-01T02:03:04Z"
	now, _ := time.Parse(time.RFC3339, nowText)
	parent := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "p", "generation": int64(3)},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "RolledOut", "status": "True", "lastTransitionTime": then},
			map[string]any{"type": SyncedCondition, "status": "False", "lastTransitionTime": then},
		}},
	}}
	types := func(s map[string]any) []string {
		var out []string
		for _, c := range s["conditions"].([]any) {
			out = append(out, c.(map[string]any)["type"].(string))
		}
		return out
	}
	tests := []struct {
		name     string
		status   map[string]any
		cond     map[string]any
		want     []string // condition types, in order
		wantTime string   // the kind condition's lastTransitionTime; "" means now
	}{
		{name: "status unchanged keeps the time", status: map[string]any{"x": 1},
			cond: map[string]any{"type": "RolledOut", "status": "True"}, want: []string{"RolledOut", SyncedCondition}, wantTime: then},
		{name: "status changed moves the time", status: nil,
			cond: map[string]any{"type": "RolledOut", "status": "False"}, want: []string{"RolledOut", SyncedCondition}},
		{name: "the hook's own conditions come first", status: map[string]any{"conditions": []any{map[string]any{"type": "Ready"}}},
			cond: map[string]any{"type": "RolledOut", "status": "True"}, want: []string{"Ready", "RolledOut", SyncedCondition}, wantTime: then},
		{name: "a hook that sets Synced keeps its own", status: map[string]any{"conditions": []any{map[string]any{"type": SyncedCondition}}},
			want: []string{SyncedCondition}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var conds []map[string]any
			if tt.cond != nil {
				conds = append(conds, tt.cond)
			}
			got := statusWithConditions(map[string]any{}, parent, tt.status, conds, now)
			if g := types(got); !slices.Equal(g, tt.want) {
				t.Fatalf("conditions %v, want %v", g, tt.want)
			}
			if tt.cond == nil {
				return
			}
			if tt.cond["observedGeneration"] != int64(3) {
				t.Errorf("observedGeneration %v, want 3", tt.cond["observedGeneration"])
			}
			want := tt.wantTime
			if want == "" {
				want = nowText
			}
			if ts := tt.cond["lastTransitionTime"]; ts != want {
				t.Errorf("lastTransitionTime %v, want %q", ts, want)
			}
		})
	}
	if _, ok := parent.Object["status"].(map[string]any)["observedGeneration"]; ok {
		t.Error("the parent was modified")
	}
}
