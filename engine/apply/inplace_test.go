package apply

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// normalizedWidget is desiredWidget in the shape a hook's answer has, which unchanged reads
// in place.
func normalizedWidget(t *testing.T) map[string]any {
	t.Helper()
	w, err := normalizedCopy(desiredWidget())
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestConfigHashIsConfigurations checks the hash computed in place against the hash of the
// configuration built, for desired objects of every shape inPlace accepts.
func TestConfigHashIsConfigurations(t *testing.T) {
	object := func(meta map[string]any) map[string]any {
		meta["name"] = "child"
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
			"data": map[string]any{"k": "v", "n": int64(1), "f": 0.5, "esc": "<\"é\">", "l": []any{nil, true, map[string]any{}}}}
	}
	tests := map[string]map[string]any{
		"no annotations":         object(map[string]any{}),
		"string annotations":     object(map[string]any{"annotations": map[string]any{"a": "1", "b": "<x>"}}),
		"empty annotations":      object(map[string]any{"annotations": map[string]any{}}),
		"null annotations":       object(map[string]any{"annotations": nil}),
		"only a hash annotation": object(map[string]any{"annotations": map[string]any{AppliedHashAnnotation: "old"}}),
		"an old hash annotation": object(map[string]any{"annotations": map[string]any{AppliedHashAnnotation: "old", "a": "x"}}),
		"server fields": object(map[string]any{"uid": "u", "resourceVersion": "7", "generation": int64(2),
			"creationTimestamp": nil, "managedFields": []any{}, "labels": map[string]any{"l": "v"}}),
		"keys around ownerReferences": object(map[string]any{"namespace": "ns", "ownerReference": "x", "ownerReferencez": "y",
			"labels": map[string]any{"app": "a"}}),
		"widget": nil, // normalizedWidget
	}
	for name, desired := range tests {
		t.Run(name, func(t *testing.T) {
			if desired == nil {
				desired = normalizedWidget(t)
			}
			owner := testOwner
			if _, ok := inPlace(&owner, desired); !ok || !isNormalized(desired) {
				t.Fatal("inPlace refuses the fixture; the test would not test the hash in place")
			}
			_, want, err := configuration(testOwner, &unstructured.Unstructured{Object: desired})
			if err != nil {
				t.Fatal(err)
			}
			got, err := configHash(&owner, desired)
			if err != nil {
				t.Fatal(err)
			}
			if string(got[:]) != want {
				t.Errorf("hash in place %s, of the configuration %s", got[:], want)
			}
		})
	}
}

// TestUnchangedIsUpToDate checks the judgement in place against the one through the
// configuration built, for observed children as the API server and others may leave them,
// and that it changes neither object.
func TestUnchangedIsUpToDate(t *testing.T) {
	spec := func(o map[string]any) map[string]any { return o["spec"].(map[string]any) }
	meta := func(o map[string]any) map[string]any { return o["metadata"].(map[string]any) }
	annotations := func(o map[string]any) map[string]any { return meta(o)["annotations"].(map[string]any) }
	ownerRef := func(o map[string]any) map[string]any { return meta(o)["ownerReferences"].([]any)[0].(map[string]any) }
	tests := []struct {
		name    string
		desired func(map[string]any) // edit of desired before the observed object is made
		server  func(map[string]any) // edit of the observed object
		want    bool
	}{
		{"identical", nil, nil, true},
		{"created, not applied since", nil, func(o map[string]any) {
			annotations(o)[AppliedHashAnnotation] = CreatedHashPrefix + annotations(o)[AppliedHashAnnotation].(string)
		}, true},
		{"created, an annotation of the hook's changed", func(o map[string]any) {
			meta(o)["annotations"] = map[string]any{"note": "a"}
		}, func(o map[string]any) {
			annotations(o)[AppliedHashAnnotation] = CreatedHashPrefix + annotations(o)[AppliedHashAnnotation].(string)
			annotations(o)["note"] = "b"
		}, false},
		{"created prefix alone", nil, func(o map[string]any) { annotations(o)[AppliedHashAnnotation] = CreatedHashPrefix }, false},
		{"an annotation of the hook's changed", func(o map[string]any) {
			meta(o)["annotations"] = map[string]any{"note": "a"}
		}, func(o map[string]any) { annotations(o)["note"] = "b" }, false},
		{"the hook's own hash annotation", func(o map[string]any) {
			meta(o)["annotations"] = map[string]any{AppliedHashAnnotation: "mine", "note": "a"}
		}, nil, true},
		{"null annotations", func(o map[string]any) { meta(o)["annotations"] = nil }, nil, true},
		{"server fields in desired", func(o map[string]any) {
			meta(o)["uid"], meta(o)["resourceVersion"], meta(o)["generation"] = "stale", "1", int64(9)
		}, func(o map[string]any) { meta(o)["generation"] = int64(1) }, true},
		{"server adds fields, status and another owner reference", nil, func(o map[string]any) {
			spec(o)["mode"] = "auto"
			o["status"] = map[string]any{"ready": true}
			meta(o)["ownerReferences"] = append([]any{map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "x-uid"}}, meta(o)["ownerReferences"].([]any)...)
			meta(o)["labels"].(map[string]any)["someone"] = "else"
		}, true},
		{"server drops null, empty map and empty list", nil, func(o map[string]any) {
			delete(spec(o), "none")
			delete(spec(o), "empty")
			delete(spec(o), "list")
		}, true},
		{"integers stored as floats", nil, func(o map[string]any) { spec(o)["size"] = 3.0 }, true},
		{"a quantity in the stored form", func(o map[string]any) { spec(o)["cpu"] = "1000m" }, func(o map[string]any) { spec(o)["cpu"] = "1" }, true},
		{"value changed by someone else", nil, func(o map[string]any) { spec(o)["size"] = int64(4) }, false},
		{"label removed by someone else", nil, func(o map[string]any) { delete(meta(o), "labels") }, false},
		{"namespace changed", nil, func(o map[string]any) { meta(o)["namespace"] = "other" }, false},
		{"our owner reference removed", nil, func(o map[string]any) { delete(meta(o), "ownerReferences") }, false},
		{"our owner reference no longer the controller", nil, func(o map[string]any) { ownerRef(o)["controller"] = false }, false},
		{"our owner reference without blockOwnerDeletion", nil, func(o map[string]any) { delete(ownerRef(o), "blockOwnerDeletion") }, false},
		{"our owner reference names another kind", nil, func(o map[string]any) { ownerRef(o)["kind"] = "Gadget" }, false},
		{"our owner reference's uid not a string", nil, func(o map[string]any) { ownerRef(o)["uid"] = int64(1) }, false},
		{"owner references not a list", nil, func(o map[string]any) { meta(o)["ownerReferences"] = "x" }, false},
		{"hash annotation changed by someone else", nil, func(o map[string]any) { annotations(o)[AppliedHashAnnotation] = "x" }, false},
		{"no annotations observed", nil, func(o map[string]any) { delete(meta(o), "annotations") }, false},
		{"no metadata observed", nil, func(o map[string]any) { delete(o, "metadata") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired := normalizedWidget(t)
			if tt.desired != nil {
				tt.desired(desired)
			}
			observed := observedAfterApply(t, desired, tt.server)
			config, hash, err := configuration(testOwner, &unstructured.Unstructured{Object: desired})
			if err != nil {
				t.Fatal(err)
			}
			if built := upToDate(config, hash, observed); built != tt.want {
				t.Fatalf("through the configuration: %v, want %v", built, tt.want)
			}
			desiredBefore, observedBefore := runtime.DeepCopyJSON(desired), observed.DeepCopy()
			owner := testOwner
			got, ok := unchanged(&owner, &unstructured.Unstructured{Object: desired}, observed)
			if !ok || got != tt.want {
				t.Errorf("in place: %v (ok %v), want %v", got, ok, tt.want)
			}
			if !reflect.DeepEqual(desired, desiredBefore) || !reflect.DeepEqual(observed, observedBefore) {
				t.Error("the judgement in place changed desired or observed")
			}
		})
	}
}

// TestUnchangedDefers checks that desired objects whose configuration is not desired's
// values are left to configuration.
func TestUnchangedDefers(t *testing.T) {
	for name, edit := range map[string]func(map[string]any){
		"a Go int":             func(o map[string]any) { o["spec"].(map[string]any)["size"] = 3 },
		"a nested Go int":      func(o map[string]any) { o["spec"].(map[string]any)["tags"] = []any{map[string]any{"n": int32(1)}} },
		"an integral float":    func(o map[string]any) { o["spec"].(map[string]any)["size"] = 3.0 },
		"owner references":     func(o map[string]any) { o["metadata"].(map[string]any)["ownerReferences"] = []any{} },
		"a number annotation":  func(o map[string]any) { o["metadata"].(map[string]any)["annotations"] = map[string]any{"a": int64(1)} },
		"annotations a string": func(o map[string]any) { o["metadata"].(map[string]any)["annotations"] = "a=b" },
		"no name":              func(o map[string]any) { delete(o["metadata"].(map[string]any), "name") },
		"no kind":              func(o map[string]any) { delete(o, "kind") },
	} {
		for _, observed := range []*unstructured.Unstructured{nil, observedAfterApply(t, normalizedWidget(t), nil)} {
			desired := normalizedWidget(t)
			edit(desired)
			owner := testOwner
			if _, ok := unchanged(&owner, &unstructured.Unstructured{Object: desired}, observed); ok {
				t.Errorf("%s, observed %v: judged in place", name, observed != nil)
			}
		}
	}
	owner := testOwner
	owner.UID = ""
	if _, ok := unchanged(&owner, &unstructured.Unstructured{Object: normalizedWidget(t)}, nil); ok {
		t.Error("an owner without uid: judged in place")
	}
}
