// Package benchsync holds the one sync logic every hook benchmark measures — a parent with a
// template rendered into n ConfigMaps with labels and data — as the Go floor and its request,
// so that the cross-language benchmark and each adapter's own benchmarks compare the same work.
package benchsync

import "strconv"

// Go is the floor: the sync logic of the benchmarks (sync.star, sync.js) written in Go over
// the same JSON-shaped values. replicas may be int64 (from the engine) or float64 (from JSON).
func Go(req map[string]any) map[string]any {
	parent := req["parent"].(map[string]any)
	meta := parent["metadata"].(map[string]any)
	spec := parent["spec"].(map[string]any)
	tmpl := spec["template"].(map[string]any)
	name := meta["name"].(string)
	n := toInt(spec["replicas"])
	children := make([]any, 0, n)
	for i := range n {
		tl := tmpl["labels"].(map[string]any)
		labels := make(map[string]any, len(tl)+2)
		for k, v := range tl {
			labels[k] = v
		}
		idx := strconv.FormatInt(i, 10)
		labels["app.kubernetes.io/instance"] = name
		labels["index"] = idx
		children = append(children, map[string]any{
			"apiVersion": "v1",
			"kind":       "ConfigMap",
			"metadata":   map[string]any{"name": name + "-" + idx, "namespace": meta["namespace"], "labels": labels},
			"data":       map[string]any{"image": tmpl["image"], "command": tmpl["command"], "index": idx},
		})
	}
	return map[string]any{"status": map[string]any{"replicas": int64(len(children))}, "children": children}
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}

// Request is the sync request of a parent whose template asks for n ConfigMaps.
func Request(n int) map[string]any {
	return map[string]any{
		"controller": map[string]any{"metadata": map[string]any{"name": "cc"}},
		"parent": map[string]any{
			"apiVersion": "example.com/v1", "kind": "App",
			"metadata": map[string]any{"name": "app", "namespace": "default", "uid": "1234",
				"labels": map[string]any{"team": "a"}},
			"spec": map[string]any{"replicas": int64(n), "template": map[string]any{
				"labels":  map[string]any{"app": "demo", "tier": "web", "version": "v1"},
				"image":   "nginx:1.27",
				"command": "serve",
			}},
		},
		"children":   map[string]any{"ConfigMap.v1": map[string]any{}},
		"related":    map[string]any{},
		"finalizing": false,
	}
}
