package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestJSONSize: the count is close to the JSON encoding's length for objects as hooks return
// them, and stops soon after the limit.
func TestJSONSize(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "a", "labels": map[string]any{"app": "x"}},
		"data":     map[string]any{"blob": strings.Repeat("x", 10000), "n": int64(12), "ok": true, "none": nil},
		"list":     []any{"a", int64(1), 2.5, map[string]any{}},
	}
	enc, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	got := jsonSize(obj, 1<<30)
	if d := got - int64(len(enc)); d < -64 || d > 64 {
		t.Errorf("jsonSize = %d, JSON is %d bytes", got, len(enc))
	}
	if n := jsonSize(obj, 100); n <= 100 || n > 11000 {
		t.Errorf("jsonSize with limit 100 = %d, want just past it", n)
	}
}

// TestObjectsRefusesWhatTheAPIServerWouldNot: a child larger than the API server's request
// limit refuses the answer, naming the child.
func TestObjectsRefusesWhatTheAPIServerWouldNot(t *testing.T) {
	resp := map[string]any{"children": []any{
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "small"}},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "huge"},
			"data": map[string]any{"blob": strings.Repeat("x", MaxObjectBytes)}},
	}}
	_, err := Objects(resp, "children", parentIn("ns"), []ChildRule{{Resource: configMaps}}, "childResources", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "children[1]") || !strings.Contains(err.Error(), "can never be written") {
		t.Fatalf("Objects = %v, want children[1] refused as too large", err)
	}
}
