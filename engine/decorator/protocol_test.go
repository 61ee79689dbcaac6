package decorator

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/resources"
)

var services = protocol.ChildRule{Resource: resources.Resource{
	GVR: schema.GroupVersionResource{Version: "v1", Resource: "services"},
	GVK: schema.GroupVersionKind{Version: "v1", Kind: "Service"}, Namespaced: true}}

func testKind() *kind {
	return &kind{rules: []protocol.ChildRule{services}, mark: &claim.Mark{Key: MarkAnnotation, Value: "spo"}}
}

func targetIn(ns string) *unstructured.Unstructured {
	t := &unstructured.Unstructured{}
	t.SetName("t")
	t.SetNamespace(ns)
	return t
}

func svc(name string, annotations map[string]any) map[string]any {
	md := map[string]any{"name": name}
	if annotations != nil {
		md["annotations"] = annotations
	}
	return map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": md}
}

func TestParseResponseRejectsWithAPath(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp map[string]any
		want string
	}{
		{"unknown field", map[string]any{"children": []any{}}, "children: unknown field"},
		{"labels not object", map[string]any{"labels": "x"}, "labels: expected an object of strings or nulls, got string"},
		{"label value not string", map[string]any{"labels": map[string]any{"a": int64(1)}}, "labels.a: expected a string or null, got int"},
		{"label key invalid", map[string]any{"labels": map[string]any{"a b": "x"}}, `labels.a b: key "a b"`},
		{"label value invalid", map[string]any{"labels": map[string]any{"a": "has space"}}, `labels.a: value "has space"`},
		{"annotation key invalid", map[string]any{"annotations": map[string]any{"-x": "y"}}, `annotations.-x: key "-x"`},
		{"engine's key", map[string]any{"annotations": map[string]any{"decorators.metascript.dev/x": "y"}},
			"annotations.decorators.metascript.dev/x: keys under decorators.metascript.dev/ are the engine's"},
		{"status not object", map[string]any{"status": []any{}}, "status: expected an object, got list"},
		{"attachments not list", map[string]any{"attachments": map[string]any{}}, "attachments: expected a list, got object"},
		{"undeclared attachment", map[string]any{"attachments": []any{map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p"}}}}, "attachments[0]: v1 Pod is not among the controller's attachments"},
		{"other decorator's mark", map[string]any{"attachments": []any{svc("s", map[string]any{MarkAnnotation: "other"})}},
			`attachments[0].metadata.annotations.metascript.dev/decorator-controller: "other" names another controller`},
		{"duplicate", map[string]any{"attachments": []any{svc("s", nil), svc("s", nil)}}, "attachments[1]: duplicate of attachments[0]"},
		{"cluster target, no namespace", map[string]any{"attachments": []any{svc("s", nil)}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := targetIn("ns")
			if tc.want == "" {
				target = targetIn("")
				tc.want = "attachments[0].metadata.namespace: required: the parent is cluster-scoped"
			}
			_, err := testKind().parseResponse(tc.resp, target)
			if err == nil {
				t.Fatalf("accepted %v", tc.resp)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestParseResponseAccepts(t *testing.T) {
	resp := map[string]any{
		"labels":             map[string]any{"a": "1", "gone": nil},
		"annotations":        map[string]any{"note": "free text, with spaces"},
		"status":             map[string]any{"ready": true},
		"attachments":        []any{svc("s", nil), svc("t", map[string]any{MarkAnnotation: "spo"})},
		"resyncAfterSeconds": int64(2),
		"finalized":          true,
	}
	got, err := testKind().parseResponse(resp, targetIn("ns"))
	if err != nil {
		t.Fatal(err)
	}
	d := got.decoration
	if *d.Labels["a"] != "1" || d.Labels["gone"] != nil || len(d.Labels) != 2 {
		t.Fatalf("labels = %v", d.Labels)
	}
	if *d.Annotations["note"] != "free text, with spaces" || d.Status["ready"] != true || !got.Finalized {
		t.Fatalf("parsed %+v", got)
	}
	for _, a := range got.attachments[0] {
		if a.GetNamespace() != "ns" || a.GetAnnotations()[MarkAnnotation] != "spo" {
			t.Fatalf("attachment %s: namespace %q, annotations %v", a.GetName(), a.GetNamespace(), a.GetAnnotations())
		}
	}
}

func TestNullStatusLeavesItAlone(t *testing.T) {
	got, err := testKind().parseResponse(map[string]any{"status": nil}, targetIn("ns"))
	if err != nil || got.decoration.Status != nil {
		t.Fatalf("status = %v, err %v", got.decoration.Status, err)
	}
}

func TestAnnotationSelector(t *testing.T) {
	sel := func(as v1alpha1.AnnotationSelector) *annotationSelector {
		s, err := newAnnotationSelector(&as)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	req := func(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	ports := map[string]string{"ports": "80,443", "label": "app"}
	for _, tc := range []struct {
		name string
		sel  *annotationSelector
		ann  map[string]string
		want bool
	}{
		{"empty selects all", sel(v1alpha1.AnnotationSelector{}), nil, true},
		{"match free-text value", sel(v1alpha1.AnnotationSelector{MatchAnnotations: map[string]string{"ports": "80,443"}}), ports, true},
		{"match differs", sel(v1alpha1.AnnotationSelector{MatchAnnotations: map[string]string{"ports": "80"}}), ports, false},
		{"exists", sel(v1alpha1.AnnotationSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			req("ports", metav1.LabelSelectorOpExists), req("label", metav1.LabelSelectorOpExists)}}), ports, true},
		{"exists, one missing", sel(v1alpha1.AnnotationSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			req("ports", metav1.LabelSelectorOpExists), req("other", metav1.LabelSelectorOpExists)}}), ports, false},
		{"does not exist", sel(v1alpha1.AnnotationSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			req("other", metav1.LabelSelectorOpDoesNotExist)}}), ports, true},
		{"in", sel(v1alpha1.AnnotationSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			req("label", metav1.LabelSelectorOpIn, "app", "web")}}), ports, true},
		{"not in, absent", sel(v1alpha1.AnnotationSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			req("other", metav1.LabelSelectorOpNotIn, "x")}}), ports, true},
		{"not in, present", sel(v1alpha1.AnnotationSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			req("label", metav1.LabelSelectorOpNotIn, "app")}}), ports, false},
	} {
		if got := tc.sel.matches(tc.ann); got != tc.want {
			t.Errorf("%s: matches = %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, bad := range []v1alpha1.AnnotationSelector{
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpIn}}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpExists, Values: []string{"v"}}}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Operator: metav1.LabelSelectorOpExists}}},
	} {
		if _, err := newAnnotationSelector(&bad); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}
