package stdlib

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

var (
	webLabels = map[string]any{"app": "web", "tier": "front", "env": "prod"}
	parent    = map[string]any{
		"apiVersion": "example.com/v1", "kind": "App",
		"metadata": map[string]any{"name": "shop", "namespace": "ns", "uid": "u-1"},
	}
	child = map[string]any{
		"metadata": map[string]any{"name": "shop-web", "ownerReferences": []any{
			map[string]any{"apiVersion": "v1", "kind": "Other", "name": "o", "uid": "u-0"},
			map[string]any{"apiVersion": "example.com/v1", "kind": "App", "name": "shop", "uid": "u-1", "controller": true},
		}},
	}
	ready   = map[string]any{"type": "Ready", "status": "True", "reason": "Up", "lastTransitionTime": "2024-01-01T00:00:00Z"}
	synced  = map[string]any{"type": "Synced", "status": "False", "lastTransitionTime": "2024-01-02T00:00:00Z"}
	withCon = map[string]any{"kind": "App", "status": map[string]any{"phase": "Running", "conditions": []any{ready, synced}}}
)

var k8sCases = []callCase{
	{fn: "k8s.match_selector", args: []any{map[string]any{"matchLabels": map[string]any{"app": "web"}}, webLabels}, want: true},
	{fn: "k8s.match_selector", args: []any{map[string]any{"matchLabels": map[string]any{"app": "db"}}, webLabels}, want: false},
	{fn: "k8s.match_selector", args: []any{map[string]any{
		"matchLabels": map[string]any{"app": "web"},
		"matchExpressions": []any{
			map[string]any{"key": "tier", "operator": "In", "values": []any{"front", "back"}},
			map[string]any{"key": "env", "operator": "NotIn", "values": []any{"dev"}},
			map[string]any{"key": "app", "operator": "Exists"},
			map[string]any{"key": "canary", "operator": "DoesNotExist"},
		}}, webLabels}, want: true},
	{fn: "k8s.match_selector", args: []any{map[string]any{"matchExpressions": []any{
		map[string]any{"key": "env", "operator": "In", "values": []any{"dev"}}}}, webLabels}, want: false},
	{fn: "k8s.match_selector", args: []any{map[string]any{}, webLabels}, want: true},
	{fn: "k8s.match_selector", args: []any{nil, webLabels}, want: false},
	{fn: "k8s.match_selector", args: []any{"app=web,tier in (front)", webLabels}, want: true},
	{fn: "k8s.match_selector", args: []any{"!app", nil}, want: true},
	{fn: "k8s.match_selector", args: []any{"app", nil}, want: false},
	{fn: "k8s.match_selector", args: []any{map[string]any{"matchlabels": map[string]any{}}, webLabels},
		err: `argument 1 (selector): invalid label selector: unknown field "matchlabels" (want matchLabels or matchExpressions)`},
	{fn: "k8s.match_selector", args: []any{map[string]any{"matchExpressions": []any{
		map[string]any{"key": "a", "operator": "In", "values": []any{"x", int64(2)}}}}, webLabels},
		err: `argument 1 (selector): invalid label selector: matchExpressions[0].values[1]: expected string, got int`},
	{fn: "k8s.match_selector", args: []any{map[string]any{"matchLabels": map[string]any{"app": true}}, webLabels},
		err: `invalid label selector: matchLabels.app: expected string, got bool`},
	{fn: "k8s.match_selector", args: []any{map[string]any{"matchExpressions": []any{
		map[string]any{"key": "a", "operator": "In"}}}, webLabels},
		err: `invalid label selector: values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty`},
	{fn: "k8s.match_selector", args: []any{map[string]any{"matchExpressions": []any{
		map[string]any{"key": "a", "operator": "Near", "values": []any{"x"}}}}, webLabels},
		err: `argument 1 (selector): invalid label selector: "Near" is not a valid label selector operator`},
	{fn: "k8s.match_selector", args: []any{"app in (", webLabels}, err: "argument 1 (selector): invalid label selector"},
	{fn: "k8s.match_selector", args: []any{"app", map[string]any{"app": int64(1)}}, err: `argument 2 (labels): value of "app": expected string, got int`},
	{fn: "k8s.match_selector", args: []any{"app", "app=web"}, err: "argument 2 (labels): expected dict, got string"},

	{fn: "k8s.get_condition", args: []any{withCon, "Synced"}, want: synced},
	{fn: "k8s.get_condition", args: []any{[]any{ready}, "Ready"}, want: ready},
	{fn: "k8s.get_condition", args: []any{withCon, "Missing"}, want: nil},
	{fn: "k8s.get_condition", args: []any{map[string]any{}, "Ready"}, want: nil},
	{fn: "k8s.get_condition", args: []any{map[string]any{"status": "ok"}, "Ready"}, err: "argument 1 (obj): status: expected dict, got string"},
	{fn: "k8s.get_condition", args: []any{map[string]any{"status": map[string]any{"conditions": map[string]any{}}}, "Ready"},
		err: "argument 1 (obj): status.conditions: expected list, got dict"},
	{fn: "k8s.get_condition", args: []any{"Ready", "Ready"}, err: "argument 1 (obj): expected object or list of conditions, got string"},
	{fn: "k8s.find_condition", args: []any{withCon, map[string]any{"status": "False"}}, want: synced},
	{fn: "k8s.find_condition", args: []any{withCon, map[string]any{"type": "Ready", "status": "False"}}, want: nil},
	{fn: "k8s.find_condition", args: []any{withCon, "Ready"}, err: "argument 2 (match): expected dict, got string"},
	{fn: "k8s.has_condition", args: []any{withCon, "Ready"}, want: true},
	{fn: "k8s.has_condition", args: []any{withCon, "Synced"}, want: false},
	{fn: "k8s.has_condition", args: []any{withCon, "Synced", "False"}, want: true},
	{fn: "k8s.has_condition", args: []any{withCon, "Gone", "False"}, want: false},
	{fn: "k8s.has_condition", args: []any{withCon, int64(1)}, err: "argument 2 (type): expected string, got int"},

	// Same status: the old lastTransitionTime stays; other fields are replaced.
	{fn: "k8s.set_condition", args: []any{[]any{ready, synced}, map[string]any{"type": "Ready", "status": "True", "reason": "Still"}},
		want: []any{map[string]any{"type": "Ready", "status": "True", "reason": "Still", "lastTransitionTime": "2024-01-01T00:00:00Z"}, synced}},
	// New status: the transition time is now.
	{fn: "k8s.set_condition", args: []any{withCon, map[string]any{"type": "Synced", "status": "True"}},
		want: map[string]any{"kind": "App", "status": map[string]any{"phase": "Running", "conditions": []any{ready,
			map[string]any{"type": "Synced", "status": "True", "lastTransitionTime": "2024-05-01T12:00:00Z"}}}}},
	// New type on an object without status: appended, status created.
	{fn: "k8s.set_condition", args: []any{map[string]any{"kind": "App"}, map[string]any{"type": "Ready", "status": "Unknown", "lastTransitionTime": "2020-01-01T00:00:00Z"}},
		want: map[string]any{"kind": "App", "status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": "Unknown", "lastTransitionTime": "2020-01-01T00:00:00Z"}}}}},
	{fn: "k8s.set_condition", args: []any{withCon, map[string]any{"type": "Ready", "status": "Yes"}},
		err: `argument 2 (condition): status: expected "True", "False" or "Unknown", got "Yes"`},
	{fn: "k8s.set_condition", args: []any{withCon, map[string]any{"status": "True"}}, err: "argument 2 (condition): type: expected non-empty string, got null"},
	{fn: "k8s.set_condition", args: []any{withCon, map[string]any{"type": "A", "status": "True", "lastTransitionTime": "today"}},
		err: `argument 2 (condition): lastTransitionTime: expected RFC 3339 time, got "today"`},
	{fn: "k8s.remove_condition", args: []any{withCon, "Ready"},
		want: map[string]any{"kind": "App", "status": map[string]any{"phase": "Running", "conditions": []any{synced}}}},
	{fn: "k8s.remove_condition", args: []any{[]any{ready}, "Other"}, want: []any{ready}},
	{fn: "k8s.remove_condition", args: []any{int64(3), "Ready"}, err: "argument 1 (obj): expected object or list of conditions, got int"},

	{fn: "k8s.make_owner_ref", args: []any{parent}, want: map[string]any{"apiVersion": "example.com/v1", "kind": "App",
		"name": "shop", "uid": "u-1", "controller": true, "blockOwnerDeletion": true}},
	{fn: "k8s.make_owner_ref", args: []any{parent, false, false}, want: map[string]any{"apiVersion": "example.com/v1", "kind": "App",
		"name": "shop", "uid": "u-1", "controller": false, "blockOwnerDeletion": false}},
	{fn: "k8s.make_owner_ref", args: []any{map[string]any{"apiVersion": "v1", "kind": "X", "metadata": map[string]any{"name": "a"}}},
		err: "argument 1 (parent): metadata.uid: expected non-empty string, got null"},
	{fn: "k8s.make_owner_ref", args: []any{parent, "yes"}, err: "argument 2 (controller): expected bool, got string"},
	{fn: "k8s.get_controller_ref", args: []any{child}, want: child["metadata"].(map[string]any)["ownerReferences"].([]any)[1]},
	{fn: "k8s.get_controller_ref", args: []any{parent}, want: nil},
	{fn: "k8s.get_controller_ref", args: []any{map[string]any{"metadata": map[string]any{"ownerReferences": "x"}}},
		err: "argument 1 (obj): metadata.ownerReferences: expected list, got string"},
	{fn: "k8s.is_controlled_by", args: []any{child, parent}, want: true},
	{fn: "k8s.is_controlled_by", args: []any{parent, parent}, want: false},
	{fn: "k8s.is_controlled_by", args: []any{child, map[string]any{}}, err: "argument 2 (parent): apiVersion: expected non-empty string"},

	{fn: "k8s.parse_quantity", args: []any{"1.5"}, want: "1500m"},
	{fn: "k8s.parse_quantity", args: []any{"1024Mi"}, want: "1Gi"},
	{fn: "k8s.parse_quantity", args: []any{int64(2)}, want: "2"},
	{fn: "k8s.parse_quantity", args: []any{0.25}, want: "250m"},
	{fn: "k8s.parse_quantity", args: []any{"1.5 GB"}, err: `argument 1 (q): invalid quantity "1.5 GB": quantities must match the regular expression`},
	{fn: "k8s.parse_quantity", args: []any{true}, err: "argument 1 (q): expected quantity (string or number), got bool"},
	{fn: "k8s.quantity_value", args: []any{"500m"}, want: 0.5},
	{fn: "k8s.quantity_value", args: []any{"1Ki"}, want: 1024.0},
	{fn: "k8s.quantity_value", args: []any{"x"}, err: "invalid quantity"},
	{fn: "k8s.compare_quantities", args: []any{"1Gi", "1000Mi"}, want: int64(1)},
	{fn: "k8s.compare_quantities", args: []any{"500m", 0.5}, want: int64(0)},
	{fn: "k8s.compare_quantities", args: []any{"1", "2"}, want: int64(-1)},
	{fn: "k8s.compare_quantities", args: []any{"1", nil}, err: "argument 2 (b): expected quantity"},
	{fn: "k8s.add_quantities", args: []any{"1Gi", "512Mi"}, want: "1536Mi"},
	{fn: "k8s.add_quantities", args: []any{"100m", int64(1)}, want: "1100m"},
	{fn: "k8s.add_quantities", args: []any{"1Gi"}, err: "missing argument 2 (b)"},

	{fn: "k8s.name", args: []any{[]any{"Shop", "Web_Server"}}, want: "shop-web-server"},
	{fn: "k8s.name", args: []any{"--a.b..c--"}, want: "a-b--c"},
	{fn: "k8s.name", args: []any{"--a.b..c--", nil, int64(253)}, want: "a.b.c"},
	{fn: "k8s.name", args: []any{[]any{"shop", "web"}, map[string]any{"replicas": int64(3)}},
		want: "shop-web-" + shortHash(`{"replicas":3}`, 10)},
	{fn: "k8s.name", args: []any{"shop", "spec-v2"}, want: "shop-" + shortHash("spec-v2", 10)},
	{fn: "k8s.name", args: []any{strings.Repeat("a", 70)}, want: strings.Repeat("a", 52) + "-" + shortHash(strings.Repeat("a", 70), 10)},
	{fn: "k8s.name", args: []any{strings.Repeat("ab-", 30), nil, int64(20)}, want: "ab-ab-ab" + "-" + shortHash(strings.TrimSuffix(strings.Repeat("ab-", 30), "-"), 10)},
	{fn: "k8s.name", args: []any{"ÄÖÜ", "h"}, want: shortHash("h", 10)},
	{fn: "k8s.name", args: []any{"x", "h", int64(11)}, want: shortHash("h", 10)},
	{fn: "k8s.name", args: []any{"!!!"}, err: "argument 1 (parts): no letters or digits to build a name from"},
	{fn: "k8s.name", args: []any{"x", "h", int64(10)}, err: "argument 3 (max_length): 10 is too short for a 11-character hash suffix"},
	{fn: "k8s.name", args: []any{"x", nil, int64(254)}, err: "argument 3 (max_length): must be between 1 and 253, got 254"},
	{fn: "k8s.name", args: []any{[]any{"a", nil}}, err: "argument 1 (parts): element 1: expected string, got null"},
	{fn: "k8s.name", args: []any{int64(1)}, err: "argument 1 (parts): expected string or list of strings, got int"},

	{fn: "k8s.merge", args: []any{
		map[string]any{"a": int64(1), "b": map[string]any{"c": int64(2), "d": []any{int64(1)}}, "e": "gone"},
		map[string]any{"b": map[string]any{"c": nil, "d": []any{int64(2)}, "f": map[string]any{"g": nil, "h": true}}, "e": nil, "i": "new"}},
		want: map[string]any{"a": int64(1), "b": map[string]any{"d": []any{int64(2)}, "f": map[string]any{"h": true}}, "i": "new"}},
	{fn: "k8s.merge", args: []any{map[string]any{"a": int64(1)}, "scalar"}, want: "scalar"},
	{fn: "k8s.merge", args: []any{"scalar", map[string]any{"a": int64(1)}}, want: map[string]any{"a": int64(1)}},
	{fn: "k8s.merge", args: []any{map[string]any{}}, err: "missing argument 2 (overlay)"},
}

// TestK8sNeverMutatesArguments runs every k8s case on deep copies and checks the arguments
// are unchanged afterwards, and that results share no map or list with them.
func TestK8sNeverMutatesArguments(t *testing.T) {
	env := testEnv()
	for _, c := range k8sCases {
		if c.err != "" {
			continue
		}
		args := deepCopy([]any(c.args)).([]any)
		got, err := lookup(t, c.fn)(env, args, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.fn, err)
		}
		if !reflect.DeepEqual(args, c.args) {
			t.Errorf("%s mutated its arguments", c.fn)
		}
		mutateAll(got)
		if !reflect.DeepEqual(args, c.args) {
			t.Errorf("%s returned a value sharing memory with its arguments", c.fn)
		}
	}
}

// mutateAll overwrites every map entry and list element of v in place.
func mutateAll(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			mutateAll(x)
			v[k] = "mutated"
		}
		v["added"] = true
	case []any:
		for i, x := range v {
			mutateAll(x)
			v[i] = "mutated"
		}
	}
}

// TestNamesAreValid: whatever the parts, k8s.name returns a valid DNS-1123 name within
// max_length, and the same parts always give the same name.
func TestNamesAreValid(t *testing.T) {
	parts := []string{"", "a", "A.B", "-x-", "ü", strings.Repeat("x.", 200), strings.Repeat("-", 300),
		"web..server", ".a.", "a-.b", strings.Repeat("abc", 100) + ".tail", "9lives"}
	for _, p := range parts {
		for _, max := range []int64{1, 11, 20, 63, 64, 253} {
			for _, hash := range []any{nil, "h"} {
				got, err := K8s.Functions["name"](nil, []any{p, hash, max}, nil)
				if err != nil {
					if strings.Contains(err.Error(), "no letters or digits") || strings.Contains(err.Error(), "too short") {
						continue
					}
					t.Fatalf("name(%q, %v, %d): %v", p, hash, max, err)
				}
				name := got.(string)
				if int64(len(name)) > max {
					t.Errorf("name(%q, %v, %d) = %q is longer than %d", p, hash, max, name, max)
				}
				valid := validation.IsDNS1123Label
				if max > 63 {
					valid = validation.IsDNS1123Subdomain
				}
				if errs := valid(name); len(errs) > 0 {
					t.Errorf("name(%q, %v, %d) = %q: %v", p, hash, max, name, errs)
				}
				again, _ := K8s.Functions["name"](nil, []any{p, hash, max}, nil)
				if again != got {
					t.Errorf("name(%q, %v, %d) is not stable: %q then %q", p, hash, max, got, again)
				}
			}
		}
	}
}
