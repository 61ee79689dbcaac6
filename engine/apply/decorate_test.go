package apply

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func str(s string) *string { return &s }

// TestDecorate: keys the decorator set are changed and removed as it says, others' keys stay,
// a null removes anyone's key, and a converged target costs no request. ConfigMaps have no
// status subresource, so the status rides with the labels.
func TestDecorate(t *testing.T) {
	ctx := integration(t)
	ns := newNamespace(t, ctx)
	target := configMap(ns, "target", map[string]string{"user": "keep", "drop": "me"}, map[string]string{"k": "v"})
	create(t, ctx, configMaps, target)
	a := New(counted, "decorator/d")
	record := DecorationRecord("d")
	step := func(d Decoration) *unstructured.Unstructured {
		t.Helper()
		if _, err := a.Decorate(ctx, configMaps, observe(t, ctx, configMaps, ns, "target"), record, false, d); err != nil {
			t.Fatal(err)
		}
		live := observe(t, ctx, configMaps, ns, "target")
		if n := requests(func() { _, err := a.Decorate(ctx, configMaps, live, record, false, d); _ = err }); n != 0 {
			t.Fatalf("converged target: %d requests, want 0", n)
		}
		return live
	}
	live := step(Decoration{Labels: map[string]*string{"a": str("1"), "b": str("2")},
		Annotations: map[string]*string{"note": str("free text")}})
	if l := live.GetLabels(); l["a"] != "1" || l["b"] != "2" || l["user"] != "keep" || live.GetAnnotations()["note"] != "free text" {
		t.Fatalf("after first apply: labels %v annotations %v", l, live.GetAnnotations())
	}
	live = step(Decoration{Labels: map[string]*string{"a": str("1"), "drop": nil}})
	l := live.GetLabels()
	if _, hasB := l["b"]; hasB || l["a"] != "1" || l["user"] != "keep" {
		t.Fatalf("after dropping b: labels %v", l)
	}
	if _, hasDrop := l["drop"]; hasDrop {
		t.Fatalf("a null did not remove another manager's key: labels %v", l)
	}
	if _, hasNote := live.GetAnnotations()["note"]; hasNote || live.GetAnnotations()[record] == "" {
		t.Fatalf("annotations %v: note should be gone, the record kept", live.GetAnnotations())
	}
	// Drift: someone changes a key the decorator set; the next call repairs it.
	live.SetLabels(map[string]string{"a": "changed", "user": "keep"})
	if _, err := plain.Resource(configMaps.GVR).Namespace(ns).Update(ctx, live, metav1.UpdateOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	live = step(Decoration{Labels: map[string]*string{"a": str("1"), "drop": nil}})
	if live.GetLabels()["a"] != "1" {
		t.Fatalf("drift not repaired: labels %v", live.GetLabels())
	}
}

// TestDecorateStatusSubresource: status fields go through the status subresource beside
// another manager's, are removed when no longer returned, and are left alone when nil.
func TestDecorateStatusSubresource(t *testing.T) {
	ctx := integration(t)
	ns := newNamespace(t, ctx)
	w := obj("test.metascript.dev/v1", "Gadget", ns, "g")
	create(t, ctx, gadgets, w)
	if _, err := plain.Resource(gadgets.GVR).Namespace(ns).ApplyStatus(ctx, "g", &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.metascript.dev/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g"},
		"status": map[string]any{"theirs": "x"}}}, metav1.ApplyOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	a := New(counted, "decorator/d")
	record := DecorationRecord("d")
	decorate := func(d Decoration) map[string]any {
		t.Helper()
		if _, err := a.Decorate(ctx, gadgets, observe(t, ctx, gadgets, ns, "g"), record, true, d); err != nil {
			t.Fatal(err)
		}
		live := observe(t, ctx, gadgets, ns, "g")
		if n := requests(func() { _, _ = a.Decorate(ctx, gadgets, live, record, true, d) }); n != 0 {
			t.Fatalf("converged target: %d requests, want 0", n)
		}
		s, _, _ := unstructured.NestedMap(live.Object, "status")
		return s
	}
	if s := decorate(Decoration{Status: map[string]any{"mine": "1", "ready": true}}); s["mine"] != "1" || s["ready"] != true || s["theirs"] != "x" {
		t.Fatalf("status %v", s)
	}
	if s := decorate(Decoration{Status: map[string]any{"mine": "2"}}); s["mine"] != "2" || s["ready"] != nil || s["theirs"] != "x" {
		t.Fatalf("status after dropping ready: %v", s)
	}
	if s := decorate(Decoration{Labels: map[string]*string{"l": str("v")}}); s["mine"] != "2" || s["theirs"] != "x" {
		t.Fatalf("status changed although none was given: %v", s)
	}
}

// TestDecorateStatusAllDropped: a decorator that stops returning every status field it set,
// on a target whose status holds nothing else, leaves an empty status; the API server does not
// refuse the write.
func TestDecorateStatusAllDropped(t *testing.T) {
	ctx := integration(t)
	ns := newNamespace(t, ctx)
	create(t, ctx, gadgets, obj("test.metascript.dev/v1", "Gadget", ns, "g"))
	a := New(counted, "decorator/d")
	record := DecorationRecord("d")
	for _, d := range []Decoration{{Status: map[string]any{"mine": "1"}}, {Status: map[string]any{}}} {
		if _, err := a.Decorate(ctx, gadgets, observe(t, ctx, gadgets, ns, "g"), record, true, d); err != nil {
			t.Fatalf("status %v: %v", d.Status, err)
		}
	}
	live := observe(t, ctx, gadgets, ns, "g")
	if s, _, _ := unstructured.NestedMap(live.Object, "status"); len(s) != 0 {
		t.Fatalf("status after dropping every field: %v", live.Object["status"])
	}
	if n := requests(func() { _, _ = a.Decorate(ctx, gadgets, live, record, true, Decoration{Status: map[string]any{}}) }); n != 0 {
		t.Fatalf("converged target: %d requests, want 0", n)
	}
}

// TestDecorateNeverRecreates: a target deleted since it was observed is not written back.
func TestDecorateNeverRecreates(t *testing.T) {
	ctx := integration(t)
	ns := newNamespace(t, ctx)
	create(t, ctx, configMaps, configMap(ns, "gone", nil, nil))
	observed := observe(t, ctx, configMaps, ns, "gone")
	if err := plain.Resource(configMaps.GVR).Namespace(ns).Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := New(counted, "decorator/d").Decorate(ctx, configMaps, observed, DecorationRecord("d"), false,
		Decoration{Labels: map[string]*string{"a": str("1")}})
	if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrGone) {
		t.Fatalf("err = %v, want ErrConflict or ErrGone", err)
	}
	if _, err := plain.Resource(configMaps.GVR).Namespace(ns).Get(ctx, "gone", metav1.GetOptions{}); err == nil {
		t.Fatal("the deleted target was created again")
	}
}

func TestDecorationRecord(t *testing.T) {
	if got := DecorationRecord("spo"); got != "decorators.metascript.dev/spo" {
		t.Errorf("DecorationRecord(spo) = %q", got)
	}
	long := strings.Repeat("a", 100)
	got := DecorationRecord(long)
	name := strings.TrimPrefix(got, "decorators.metascript.dev/")
	if len(name) != 63 || got == DecorationRecord(strings.Repeat("a", 99)+"b") {
		t.Errorf("DecorationRecord(long) = %q (name part %d characters)", got, len(name))
	}
}
