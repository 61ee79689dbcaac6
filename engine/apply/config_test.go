package apply

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

var testOwner = metav1.OwnerReference{APIVersion: "test.metascript.dev/v1", Kind: "Widget", Name: "parent", UID: "parent-uid"}

// observedAfterApply returns what the API server would store for desired: the configuration
// plus the given server-side additions.
func observedAfterApply(t *testing.T, desired map[string]interface{}, edit func(map[string]interface{})) *unstructured.Unstructured {
	t.Helper()
	config, _, err := configuration(testOwner, &unstructured.Unstructured{Object: desired})
	if err != nil {
		t.Fatal(err)
	}
	observed := config.DeepCopy()
	observed.SetUID("child-uid")
	observed.SetResourceVersion("7")
	if edit != nil {
		edit(observed.Object)
	}
	return observed
}

func desiredWidget() map[string]interface{} {
	return map[string]interface{}{
		"apiVersion": "test.metascript.dev/v1",
		"kind":       "Widget",
		"metadata": map[string]interface{}{
			"name": "child", "namespace": "ns",
			"labels": map[string]interface{}{"app": "a"},
		},
		"spec": map[string]interface{}{
			"size":  3,
			"ratio": 0.5,
			"tags":  []interface{}{"x", map[string]interface{}{"k": "v"}},
			"none":  nil,
			"empty": map[string]interface{}{},
			"list":  []interface{}{},
		},
	}
}

func TestUpToDate(t *testing.T) {
	spec := func(o map[string]interface{}) map[string]interface{} { return o["spec"].(map[string]interface{}) }
	meta := func(o map[string]interface{}) map[string]interface{} { return o["metadata"].(map[string]interface{}) }
	tests := []struct {
		name    string
		desired func(map[string]interface{}) // edit of desired after the observed object was made
		server  func(map[string]interface{}) // edit of the observed object
		want    bool
	}{
		{"identical", nil, nil, true},
		{"server adds fields, status and another owner reference", nil, func(o map[string]interface{}) {
			spec(o)["mode"] = "auto"
			o["status"] = map[string]interface{}{"ready": true}
			meta(o)["ownerReferences"] = append([]interface{}{map[string]interface{}{
				"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "x-uid"}}, meta(o)["ownerReferences"].([]interface{})...)
			meta(o)["labels"].(map[string]interface{})["someone"] = "else"
		}, true},
		{"server drops null, empty map and empty list", nil, func(o map[string]interface{}) {
			delete(spec(o), "none")
			delete(spec(o), "empty")
			delete(spec(o), "list")
		}, true},
		{"integers stored as floats", nil, func(o map[string]interface{}) { spec(o)["size"] = 3.0 }, true},
		{"desired float equal to a stored integer", func(o map[string]interface{}) { spec(o)["size"] = 3.0 }, nil, true},

		{"value changed by someone else", nil, func(o map[string]interface{}) { spec(o)["size"] = int64(4) }, false},
		{"number changed to a string", nil, func(o map[string]interface{}) { spec(o)["size"] = "3" }, false},
		{"field removed by someone else", nil, func(o map[string]interface{}) { delete(spec(o), "ratio") }, false},
		{"label removed by someone else", nil, func(o map[string]interface{}) { delete(meta(o), "labels") }, false},
		{"null set to a value", nil, func(o map[string]interface{}) { spec(o)["none"] = "x" }, false},
		{"list item changed", nil, func(o map[string]interface{}) { spec(o)["tags"] = []interface{}{"x", map[string]interface{}{"k": "w"}} }, false},
		{"list item added", nil, func(o map[string]interface{}) { spec(o)["tags"] = append(spec(o)["tags"].([]interface{}), "z") }, false},
		{"map replaced by a scalar", nil, func(o map[string]interface{}) { spec(o)["empty"] = "x" }, false},
		{"our owner reference removed", nil, func(o map[string]interface{}) { delete(meta(o), "ownerReferences") }, false},
		{"our owner reference no longer the controller", nil, func(o map[string]interface{}) {
			meta(o)["ownerReferences"].([]interface{})[0].(map[string]interface{})["controller"] = false
		}, false},
		{"hash annotation changed by someone else", nil, func(o map[string]interface{}) {
			meta(o)["annotations"].(map[string]interface{})[AppliedHashAnnotation] = "x"
		}, false},
		{"hook stopped returning a field", func(o map[string]interface{}) { delete(spec(o), "ratio") }, nil, false},
		{"hook added a field", func(o map[string]interface{}) { spec(o)["color"] = "red" }, nil, false},
		{"hook changed a value", func(o map[string]interface{}) { spec(o)["size"] = 5 }, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			observed := observedAfterApply(t, desiredWidget(), tt.server)
			desired := desiredWidget()
			if tt.desired != nil {
				tt.desired(desired)
			}
			got, err := UpToDate(testOwner, &unstructured.Unstructured{Object: desired}, observed)
			if err != nil || got != tt.want {
				t.Errorf("UpToDate = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if ok, _ := UpToDate(testOwner, &unstructured.Unstructured{Object: desiredWidget()}, nil); ok {
		t.Error("UpToDate with nothing observed = true")
	}
}

// TestUpToDateQuantities: a quantity the hook wrote in another form than the API server
// stores it compares equal to the stored form; a changed quantity or string does not.
func TestUpToDateQuantities(t *testing.T) {
	for _, tc := range []struct {
		desired, stored string
		want            bool
	}{
		{"1000m", "1", true},
		{"0.5Gi", "512Mi", true},
		{"1.5", "1500m", true},
		{"1000m", "2", false},
		{"red", "blue", false},
		{"1", "01", false},
	} {
		desired := desiredWidget()
		desired["spec"].(map[string]interface{})["cpu"] = tc.desired
		observed := observedAfterApply(t, desired, func(o map[string]interface{}) {
			o["spec"].(map[string]interface{})["cpu"] = tc.stored
		})
		desired = desiredWidget()
		desired["spec"].(map[string]interface{})["cpu"] = tc.desired
		got, err := UpToDate(testOwner, &unstructured.Unstructured{Object: desired}, observed)
		if err != nil || got != tc.want {
			t.Errorf("desired %q, stored %q: UpToDate = %v, %v; want %v", tc.desired, tc.stored, got, err, tc.want)
		}
	}
}

func TestConfiguration(t *testing.T) {
	desired := desiredWidget()
	m := desired["metadata"].(map[string]interface{})
	m["uid"], m["resourceVersion"], m["creationTimestamp"] = "stale", "1", nil
	m["annotations"] = map[string]interface{}{AppliedHashAnnotation: "stale", "note": "kept"}
	m["ownerReferences"] = []interface{}{
		map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "name": "plain", "uid": "plain-uid"},
		map[string]interface{}{"apiVersion": "v1", "kind": "Widget", "name": "parent", "uid": string(testOwner.UID)},
	}
	before, _ := json.Marshal(desired)
	config, hash, err := configuration(testOwner, &unstructured.Unstructured{Object: desired})
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(desired); string(after) != string(before) {
		t.Error("configuration modified desired")
	}
	if config.GetUID() != "" || config.GetResourceVersion() != "" {
		t.Errorf("server-owned metadata kept: uid %q resourceVersion %q", config.GetUID(), config.GetResourceVersion())
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(config.Object, "metadata", "creationTimestamp"); found {
		t.Error("creationTimestamp kept")
	}
	if a := config.GetAnnotations(); a[AppliedHashAnnotation] != hash || a["note"] != "kept" || len(hash) != 64 {
		t.Errorf("annotations = %v, hash %q", a, hash)
	}
	refs := config.GetOwnerReferences()
	if len(refs) != 2 || refs[0].UID != "plain-uid" || refs[1].UID != testOwner.UID || !*refs[1].Controller || !*refs[1].BlockOwnerDeletion {
		t.Errorf("ownerReferences = %+v", refs)
	}

	// The hash ignores what is dropped or overwritten, and the Go types of numbers.
	same := desiredWidget()
	same["spec"].(map[string]interface{})["size"] = int64(3)
	sm := same["metadata"].(map[string]interface{})
	sm["annotations"] = map[string]interface{}{"note": "kept"}
	sm["ownerReferences"] = m["ownerReferences"].([]interface{})[:1]
	if _, h, _ := configuration(testOwner, &unstructured.Unstructured{Object: same}); h != hash {
		t.Error("hash depends on server-owned fields, the stale annotation or number types")
	}
	other := testOwner
	other.UID = "other-parent"
	if _, h, _ := configuration(other, &unstructured.Unstructured{Object: desiredWidget()}); h == hash {
		t.Error("hash does not depend on the owner")
	}
}

func TestConfigurationRefuses(t *testing.T) {
	yes := true
	tests := []struct {
		name  string
		owner metav1.OwnerReference
		edit  func(*unstructured.Unstructured)
	}{
		{"owner without uid", metav1.OwnerReference{APIVersion: "v1", Kind: "Widget", Name: "p"}, nil},
		{"no name", testOwner, func(u *unstructured.Unstructured) { u.SetName("") }},
		{"no kind", testOwner, func(u *unstructured.Unstructured) { u.SetKind("") }},
		{"another controller", testOwner, func(u *unstructured.Unstructured) {
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "X", Name: "x", UID: "x", Controller: &yes}})
		}},
		{"not JSON", testOwner, func(u *unstructured.Unstructured) { u.Object["spec"] = map[string]interface{}{"f": func() {}} }},
		{"a null annotation", testOwner, func(u *unstructured.Unstructured) {
			u.Object["metadata"].(map[string]any)["annotations"] = map[string]any{"a": nil}
		}},
		{"a number annotation", testOwner, func(u *unstructured.Unstructured) {
			u.Object["metadata"].(map[string]any)["annotations"] = map[string]any{"a": int64(1), "b": "x"}
		}},
		{"annotations not an object", testOwner, func(u *unstructured.Unstructured) {
			u.Object["metadata"].(map[string]any)["annotations"] = "a=b"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: desiredWidget()}
			if tt.edit != nil {
				tt.edit(u)
			}
			if _, _, err := configuration(tt.owner, u); !errors.Is(err, ErrInvalid) {
				t.Errorf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestFieldManager(t *testing.T) {
	if got := FieldManager("configmap-sync"); got != "metascript/configmap-sync" {
		t.Errorf("FieldManager = %q", got)
	}
	long1, long2 := strings.Repeat("a", 200)+"1", strings.Repeat("a", 200)+"2"
	m1, m2 := FieldManager(long1), FieldManager(long2)
	if len(m1) != 128 || len(m2) != 128 || m1 == m2 || !strings.HasPrefix(m1, "metascript/aaa") {
		t.Errorf("long names: %q (%d), %q (%d)", m1, len(m1), m2, len(m2))
	}
	if exact := strings.Repeat("b", 128-len("metascript/")); FieldManager(exact) != "metascript/"+exact {
		t.Error("a name that fits was shortened")
	}
}

// TestNormalizedMatchesJSON checks the direct copy against the JSON round trip it replaces.
func TestNormalizedMatchesJSON(t *testing.T) {
	values := []interface{}{
		"s", true, false, nil, int64(-3), 7, int32(8), 1.0, -0.0, 0.5, 1e15, 1e17, 9.2e18, 9.3e18, 1e20, 1e21, -1e21,
		-(1 << 63), float64(1 << 62), 123456789.125,
		[]interface{}{1.0, "a", []interface{}{}, map[string]interface{}{}},
		map[string]interface{}{"n": 2.0, "l": []interface{}{map[string]interface{}{"x": nil}}},
	}
	for _, v := range values {
		m := map[string]interface{}{"v": v}
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]interface{}{}
		if err := utiljson.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		got, err := normalizedCopy(m)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%#v: got %#v, want %#v", v, got["v"], want["v"])
		}
	}
	if _, err := normalizedCopy(map[string]interface{}{"v": math.NaN()}); !errors.Is(err, ErrInvalid) {
		t.Errorf("NaN: got %v, want ErrInvalid", err)
	}
	// Other Go types go through JSON.
	got, err := normalizedCopy(map[string]interface{}{"v": []string{"a"}, "w": uint8(3)})
	if err != nil || !reflect.DeepEqual(got, map[string]interface{}{"v": []interface{}{"a"}, "w": int64(3)}) {
		t.Errorf("typed values: got %#v, %v", got, err)
	}
}

// TestConfigurationSharesNothingItChanges checks, for a desired object already in
// normalized form (whose values configuration shares rather than copies, as hook answers
// are), that building its configuration changes nothing in it.
func TestConfigurationSharesNothingItChanges(t *testing.T) {
	desired := map[string]any{
		"apiVersion": "test.metascript.dev/v1", "kind": "Widget",
		"metadata": map[string]any{
			"name": "child", "namespace": "ns", "uid": "stale", "resourceVersion": "1",
			"labels":      map[string]any{"app": "a"},
			"annotations": map[string]any{AppliedHashAnnotation: "stale", "note": "kept"},
		},
		"spec": map[string]any{"size": int64(3), "ratio": 0.5, "tags": []any{"x", map[string]any{"k": "v"}}},
	}
	if !isNormalized(desired) {
		t.Fatal("the fixture is not in normalized form; the test would not test sharing")
	}
	before, _ := json.Marshal(desired)
	for range 2 { // the second time sees what the first may have left
		config, hash, err := configuration(testOwner, &unstructured.Unstructured{Object: desired})
		if err != nil {
			t.Fatal(err)
		}
		if after, _ := json.Marshal(desired); string(after) != string(before) {
			t.Fatalf("configuration modified desired:\n%s\n%s", before, after)
		}
		if a := config.GetAnnotations(); a[AppliedHashAnnotation] != hash || a["note"] != "kept" {
			t.Errorf("annotations = %v", a)
		}
	}
}

// TestOwnerRef checks OwnerRef against the ControllerRef metav1 makes.
func TestOwnerRef(t *testing.T) {
	for _, apiVersion := range []string{"v1", "apps/v1", "test.metascript.dev/v1alpha1"} {
		parent := &unstructured.Unstructured{}
		parent.SetAPIVersion(apiVersion)
		parent.SetKind("Widget")
		parent.SetName("p")
		parent.SetUID("p-uid")
		if got, want := OwnerRef(parent), *metav1.NewControllerRef(parent, parent.GroupVersionKind()); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: OwnerRef = %+v, want %+v", apiVersion, got, want)
		}
	}
}
