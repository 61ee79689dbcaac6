package crdschema

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/cmd/metascript/internal/fieldpath"
)

func readObject(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	// Integers as int64, as the API server decodes them.
	var obj map[string]any
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		file string
		// want are the problems, in order: path and the start of the message.
		want    [][2]string
		removed []string
		// gone are paths Result.Object no longer has.
		gone []string
	}{
		{file: "valid.yaml"},
		{file: "refused.yaml",
			want: [][2]string{
				{"spec.hooks.sync.starlark.sorce", "unknown field"},
				{"spec.resyncPeriodSecond", "unknown field"},
				{"spec.childResources[0].updateStrategy.method", `Unsupported value: "Inplace": supported values: "OnDelete", "Recreate", "InPlace"`},
				{"spec.hooks.sync.budget.maxMemory", `Invalid value: "lots": spec.hooks.sync.budget.maxMemory in body should match`},
				{"spec.hooks.sync.budget.maxSteps", "Invalid value: -1: spec.hooks.sync.budget.maxSteps in body should be greater than or equal to 1"},
				{"spec.hooks.sync.version", `Unsupported value: "v3": supported values: "v1", "v2"`},
				{"spec.resyncPeriodSeconds", "Invalid value: -5: spec.resyncPeriodSeconds in body should be greater than or equal to 1"},
			},
			removed: []string{"spec.childResources[0].updateStrategy.method", "spec.hooks.sync.budget.maxMemory",
				"spec.hooks.sync.budget.maxSteps", "spec.hooks.sync.version", "spec.resyncPeriodSeconds"},
			gone: []string{"spec.resyncPeriodSecond", "spec.hooks.sync.starlark.sorce", "spec.resyncPeriodSeconds"},
		},
		{file: "rules.yaml",
			want: [][2]string{
				{"spec.hooks.finalize", "Invalid value: budget.maxSteps applies to Starlark hooks only"},
				{"spec.hooks.sync", "Invalid value: exactly one of starlark, javascript or webhook must be set"},
			},
		},
		{file: "retyped.yaml",
			want: [][2]string{
				{"spec.hooks.sync.starlark", `Invalid value: "string": spec.hooks.sync.starlark in body must be of type object`},
			},
			removed: []string{"spec.hooks.sync.starlark"},
		},
	} {
		t.Run(tt.file, func(t *testing.T) {
			obj := readObject(t, tt.file)
			before := readObject(t, tt.file)
			schema, err := For("metascript.dev/v1alpha1", "CompositeController")
			if err != nil || schema == nil {
				t.Fatalf("For: %v, %v", schema, err)
			}
			r := schema.Check(context.Background(), obj)
			if !reflect.DeepEqual(obj, before) {
				t.Error("Check changed its argument")
			}
			var got [][2]string
			for _, p := range r.Problems {
				got = append(got, [2]string{p.Path, p.Message})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems:\n%q\nwant:\n%q", got, tt.want)
			}
			for i := range got {
				if got[i][0] != tt.want[i][0] || !strings.HasPrefix(got[i][1], tt.want[i][1]) {
					t.Errorf("problem %d: %q, want %q...", i, got[i], tt.want[i])
				}
			}
			if !reflect.DeepEqual(r.Removed, tt.removed) {
				t.Errorf("removed %q, want %q", r.Removed, tt.removed)
			}
			for _, p := range tt.gone {
				if _, ok := fieldpath.Get(r.Object, fieldpath.Parse(p)); ok {
					t.Errorf("Object still has %s", p)
				}
			}
		})
	}
}

func TestFor(t *testing.T) {
	for _, tt := range []struct {
		apiVersion, kind string
		found            bool
	}{
		{"metascript.dev/v1alpha1", "CompositeController", true},
		{"metascript.dev/v1alpha1", "NamespacedMapController", true},
		{"metascript.dev/v1alpha1", "ControllerRevision", true},
		{"metascript.dev/v1beta1", "CompositeController", false},
		{"metacontroller.k8s.io/v1alpha1", "CompositeController", false},
	} {
		s, err := For(tt.apiVersion, tt.kind)
		if err != nil || (s != nil) != tt.found {
			t.Errorf("For(%s, %s) = %v, %v; want found %v", tt.apiVersion, tt.kind, s, err, tt.found)
		}
	}
	versions, err := Versions("metascript.dev", "MapController")
	if err != nil || !reflect.DeepEqual(versions, []string{"metascript.dev/v1alpha1"}) {
		t.Errorf("Versions(MapController) = %q, %v", versions, err)
	}
	if versions, _ := Versions("metascript.dev", "Nothing"); versions != nil {
		t.Errorf("Versions(Nothing) = %q, want none", versions)
	}
}
