package fieldpath

import (
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		path string
		want []Step
	}{
		{"", nil},
		{"spec", []Step{{Key: "spec"}}},
		{"spec.hooks.sync", []Step{{Key: "spec"}, {Key: "hooks"}, {Key: "sync"}}},
		{"spec.childResources[0].updateStrategy.method", []Step{{Key: "spec"}, {Key: "childResources"},
			{Key: "0", Subscript: true}, {Key: "updateStrategy"}, {Key: "method"}}},
		{"metadata.labels[app.kubernetes.io/name]", []Step{{Key: "metadata"}, {Key: "labels"},
			{Key: "app.kubernetes.io/name", Subscript: true}}},
		{"items[2][1]", []Step{{Key: "items"}, {Key: "2", Subscript: true}, {Key: "1", Subscript: true}}},
		{"a[unclosed", []Step{{Key: "a"}, {Key: "unclosed", Subscript: true}}},
	} {
		if got := Parse(tt.path); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", tt.path, got, tt.want)
		}
	}
}

func TestGetAndDelete(t *testing.T) {
	obj := func() map[string]any {
		return map[string]any{"spec": map[string]any{
			"list":   []any{map[string]any{"a": int64(1)}, "x"},
			"labels": map[string]any{"app.kubernetes.io/name": "n"},
		}}
	}
	for _, tt := range []struct {
		path      string
		wantValue any
		found     bool
		// after is the object once path is deleted; nil when nothing is deleted.
		after map[string]any
	}{
		{"spec.list[0].a", int64(1), true, map[string]any{"spec": map[string]any{
			"list": []any{map[string]any{}, "x"}, "labels": map[string]any{"app.kubernetes.io/name": "n"}}}},
		{"spec.list[1]", "x", true, map[string]any{"spec": map[string]any{
			"list": []any{map[string]any{"a": int64(1)}, nil}, "labels": map[string]any{"app.kubernetes.io/name": "n"}}}},
		{"spec.labels[app.kubernetes.io/name]", "n", true, map[string]any{"spec": map[string]any{
			"list": []any{map[string]any{"a": int64(1)}, "x"}, "labels": map[string]any{}}}},
		{"spec.list[2]", nil, false, nil},
		{"spec.list[x]", nil, false, nil},
		{"spec.missing.deeper", nil, false, nil},
		{"spec.list[1].a", nil, false, nil},
	} {
		o := obj()
		v, ok := Get(o, Parse(tt.path))
		if ok != tt.found || !reflect.DeepEqual(v, tt.wantValue) {
			t.Errorf("Get(%q) = %v, %v; want %v, %v", tt.path, v, ok, tt.wantValue, tt.found)
		}
		deleted := Delete(o, Parse(tt.path))
		if deleted != (tt.after != nil) {
			t.Errorf("Delete(%q) = %v, want %v", tt.path, deleted, tt.after != nil)
		}
		if tt.after != nil && !reflect.DeepEqual(o, tt.after) {
			t.Errorf("after Delete(%q): %v, want %v", tt.path, o, tt.after)
		}
	}
}

func TestWithin(t *testing.T) {
	for _, tt := range []struct {
		path, ancestor string
		want           bool
	}{
		{"spec.hooks.sync", "spec.hooks.sync", true},
		{"spec.hooks.sync.budget", "spec.hooks.sync", true},
		{"spec.hooks[0]", "spec.hooks", true},
		{"spec.hooksync", "spec.hooks", false},
		{"spec.hooks", "spec.hooks.sync", false},
	} {
		if got := Within(tt.path, tt.ancestor); got != tt.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tt.path, tt.ancestor, got, tt.want)
		}
	}
}
