package stdlib

import (
	"fmt"
	"testing"
)

// Benchmarks of the calls a sync hook makes per child, through the Func interface the
// adapters use (argument binding included, language conversion excluded).
//
//	go test ./stdlib -run '^$' -bench . -benchmem
func BenchmarkStdlib(b *testing.B) {
	labels := map[string]any{"app": "shop", "tier": "front", "env": "prod"}
	selector := map[string]any{
		"matchLabels":      map[string]any{"app": "shop"},
		"matchExpressions": []any{map[string]any{"key": "tier", "operator": "In", "values": []any{"front", "back"}}},
	}
	spec := map[string]any{"replicas": int64(3), "template": map[string]any{"image": "nginx:1.27", "ports": []any{int64(80)}}}
	obj := map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Ready", "status": "False", "lastTransitionTime": "2024-01-01T00:00:00Z"},
		map[string]any{"type": "Synced", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"},
	}}}
	cases := []struct {
		fn   string
		args []any
	}{
		{"json.encode", []any{spec}},
		{"json.decode", []any{`{"replicas":3,"template":{"image":"nginx:1.27","ports":[80]}}`}},
		{"yaml.encode", []any{spec}},
		{"hash.short", []any{"corner-shop-web"}},
		{"time.add", []any{"2024-05-01T12:00:00Z", "1h30m"}},
		{"strings.split", []any{"a,b,c,d", ","}},
		{"re.match", []any{`^web-\d+$`, "web-12"}},
		{"re.replace", []any{`(\w+)@(\w+)`, "bob@example alice@corp", "$2/$1"}},
		{"k8s.match_selector", []any{selector, labels}},
		{"k8s.set_condition", []any{obj, map[string]any{"type": "Ready", "status": "True"}}},
		{"k8s.name", []any{[]any{"corner-shop", "web"}, spec}},
		{"k8s.merge", []any{spec, map[string]any{"replicas": int64(5)}}},
		{"k8s.compare_quantities", []any{"1Gi", "512Mi"}},
	}
	env := testEnv()
	for _, c := range cases {
		f := lookupFunc(c.fn)
		b.Run(c.fn, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f(env, c.args, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func lookupFunc(qualified string) Func {
	for _, m := range All() {
		for name, f := range m.Functions {
			if m.Name+"."+name == qualified {
				return f
			}
		}
	}
	panic(fmt.Sprintf("no function %s", qualified))
}
