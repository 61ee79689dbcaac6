package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestCanonicalHashIsJSONMarshal checks that canonicalHash hashes exactly the bytes
// json.Marshal writes, which the hashes recorded on existing children were made from.
func TestCanonicalHashIsJSONMarshal(t *testing.T) {
	values := []any{
		nil, true, false, int64(0), int64(-42), int64(math.MaxInt64), int64(math.MinInt64),
		"", "plain text", "quote \" backslash \\", "html <b>&amp;</b>", "tab\tnewline\ncr\r\x00\x1f\x7f",
		"é ü 世界", "\u2028\u2029", "invalid \xff utf-8",
		0.5, -1.25e-7, 1e21, 123456789.125, 3e-300,
		[]any{}, []any{nil, "a", int64(1), 2.5, []any{map[string]any{}}},
		map[string]any{}, map[string]any{"b": int64(1), "a": "x", "B": true, "<&>": nil, "é": []any{}, "": "empty key"},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "child", "labels": map[string]any{"app": "web"},
				"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "P", "name": "p", "uid": "u",
					"controller": true, "blockOwnerDeletion": true}}},
			"data": map[string]any{"key": "value", "json": `{"a": [1, 2]}`}},
		int(7), float32(1.5), []string{"typed", "slice"}, // not normalized: still json.Marshal's bytes
	}
	for _, v := range values {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		got, err := canonicalHash(v)
		if err != nil {
			t.Fatalf("canonicalHash(%#v): %v", v, err)
		}
		if want := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("canonicalHash(%#v) = %s, json.Marshal gives %s (%s)", v, got, want, raw)
		}
	}
	if _, err := canonicalHash(map[string]any{"x": math.NaN()}); err == nil {
		t.Error("canonicalHash of NaN: no error, json.Marshal refuses it")
	}
}

// TestConfigurationHashUnchanged checks configuration's hash against the way it was first
// computed (unstructured's accessors and json.Marshal), so that no child already recorded
// with a hash looks changed to a newer engine.
func TestConfigurationHashUnchanged(t *testing.T) {
	reference := func(desired map[string]any) string {
		obj, err := normalizedCopy(desired)
		if err != nil {
			t.Fatal(err)
		}
		config := &unstructured.Unstructured{Object: obj}
		for _, f := range serverFields {
			unstructured.RemoveNestedField(obj, "metadata", f)
		}
		refs := []metav1.OwnerReference{}
		for _, ref := range config.GetOwnerReferences() {
			if ref.UID != testOwner.UID {
				refs = append(refs, ref)
			}
		}
		owner, yes := testOwner, true
		owner.Controller, owner.BlockOwnerDeletion = &yes, &yes
		config.SetOwnerReferences(append(refs, owner))
		annotations := config.GetAnnotations()
		if _, ok := annotations[AppliedHashAnnotation]; ok {
			delete(annotations, AppliedHashAnnotation)
			config.SetAnnotations(annotations)
		}
		raw, err := json.Marshal(config.Object)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		return hex.EncodeToString(sum[:])
	}
	object := func(meta map[string]any) map[string]any {
		meta["name"] = "child"
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
			"data": map[string]any{"k": "v", "n": int64(1)}}
	}
	tests := map[string]map[string]any{
		"no annotations":         object(map[string]any{}),
		"string annotations":     object(map[string]any{"annotations": map[string]any{"a": "1", "b": "<x>"}}),
		"empty annotations":      object(map[string]any{"annotations": map[string]any{}}),
		"null annotations":       object(map[string]any{"annotations": nil}),
		"an old hash annotation": object(map[string]any{"annotations": map[string]any{AppliedHashAnnotation: "old", "a": "x"}}),
		"server fields":          object(map[string]any{"uid": "u", "resourceVersion": "7", "labels": map[string]any{"l": "v"}}),
		"other owners": object(map[string]any{"ownerReferences": []any{
			map[string]any{"apiVersion": "v1", "kind": "Other", "name": "o", "uid": "other-uid"},
			map[string]any{"apiVersion": "v1", "kind": "Mine", "name": "m", "uid": string(testOwner.UID)}}}),
	}
	for name, desired := range tests {
		t.Run(name, func(t *testing.T) {
			want := reference(desired)
			_, got, err := configuration(testOwner, &unstructured.Unstructured{Object: desired})
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("hash %s, first computed as %s", got, want)
			}
		})
	}
}

// TestCanonicalHashConcurrent checks that concurrent calls, which share the pooled
// buffers, each hash their own value.
func TestCanonicalHashConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				v := map[string]any{"g": int64(g), "i": int64(i), "pad": strings.Repeat("x", i*10)}
				raw, _ := json.Marshal(v)
				sum := sha256.Sum256(raw)
				if got, _ := canonicalHash(v); got != hex.EncodeToString(sum[:]) {
					t.Errorf("goroutine %d, value %d: wrong hash", g, i)
					return
				}
			}
		}()
	}
	wg.Wait()
}
