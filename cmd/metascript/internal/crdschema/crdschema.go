// Package crdschema checks resources against the CustomResourceDefinitions of manifests/crds
// with the API server's own validation (k8s.io/apiextensions-apiserver): pruning of fields the
// schema does not declare, defaulting, the OpenAPI schema, list types and the
// x-kubernetes-validations rules. Problems read as the API server words them, each with its
// field path, so that a file passes here exactly when the API server would accept it.
package crdschema

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/cmd/metascript/internal/fieldpath"
	"metascript.dev/metascript/manifests/crds"
)

// Schema is the validation of one served version of one CRD.
type Schema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	// rules are the x-kubernetes-validations; nil when the schema has none.
	rules *cel.Validator
}

// Problem is one thing the API server would refuse a resource for.
type Problem struct {
	// Path is the field's path from the top of the resource: spec.hooks.sync.budget.maxSteps.
	Path string
	// Message is the API server's, without the path: `Unsupported value: "Inplace": ...`.
	Message string
}

// Result is what Check found.
type Result struct {
	Problems []Problem
	// Object is the resource as the API server would store it (unknown fields pruned,
	// defaults set), less the values it refused, so that what is still right in it can be
	// read and checked further.
	Object map[string]any
	// Removed are the paths of the refused values taken out of Object.
	Removed []string
}

// Check validates obj, a resource of this schema's kind in JSON shape; obj is not changed.
// Unlike the API server, it does not stop before the x-kubernetes-validations rules when
// the OpenAPI schema already refuses something: the rules run on Result.Object, so that
// every problem is found in one pass.
func (s *Schema) Check(ctx context.Context, obj map[string]any) Result {
	u := runtime.DeepCopyJSON(obj)
	var r Result
	// Strict field validation: what pruning would drop silently is refused.
	for _, p := range structuralpruning.PruneWithOptions(u, s.structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		r.Problems = append(r.Problems, Problem{Path: p, Message: "unknown field"})
	}
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u, s.structural)
	structuraldefaulting.Default(u, s.structural)

	var errs field.ErrorList
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u, s.validator)...)
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u, s.structural, false)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, s.structural, u)...)
	sortErrors(errs)
	// A value of the wrong type, out of range or not in an enum is taken out: what is left
	// decodes, and the rules below see the object as it would be without it.
	retyped := map[string]bool{}
	for _, e := range errs {
		r.Problems = append(r.Problems, Problem{Path: e.Field, Message: e.ErrorBody()})
		if !refusedValue(u, e) {
			continue
		}
		if fieldpath.Delete(u, fieldpath.Parse(e.Field)) {
			r.Removed = append(r.Removed, e.Field)
			if e.Type == field.ErrorTypeTypeInvalid {
				retyped[parentOf(e.Field)] = true
			}
		}
	}
	if s.rules != nil {
		ruleErrs, _ := s.rules.Validate(ctx, nil, s.structural, u, nil, celconfig.RuntimeCELCostBudget)
		sortErrors(ruleErrs)
		for _, e := range ruleErrs {
			// The object whose field of the wrong type was taken out breaks its rules only
			// because of that: the type error says it already.
			if retyped[e.Field] {
				continue
			}
			r.Problems = append(r.Problems, Problem{Path: e.Field, Message: e.ErrorBody()})
		}
	}
	r.Object = u
	return r
}

// sortErrors puts errs in the order of their paths: the validators' own order follows
// map iteration in places.
func sortErrors(errs field.ErrorList) {
	slices.SortStableFunc(errs, func(a, b *field.Error) int {
		return cmp.Or(strings.Compare(a.Field, b.Field), strings.Compare(a.ErrorBody(), b.ErrorBody()))
	})
}

// refusedValue reports whether e refuses the value at its path as such (a scalar out of
// range, of the wrong type, not among the allowed), rather than saying something of an
// object as a whole (too many items, a field missing, a rule broken).
func refusedValue(obj map[string]any, e *field.Error) bool {
	switch e.Type {
	case field.ErrorTypeTypeInvalid:
		return true
	case field.ErrorTypeInvalid, field.ErrorTypeNotSupported:
		v, ok := fieldpath.Get(obj, fieldpath.Parse(e.Field))
		if !ok {
			return false
		}
		switch v.(type) {
		case map[string]any, []any:
			return false
		}
		return true
	}
	return false
}

// parentOf is the path of the object or list holding the field at path.
func parentOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '.' || path[i] == '[' {
			return path[:i]
		}
	}
	return ""
}

// For returns the schema of the resources of apiVersion and kind that the CRDs of
// manifests/crds serve, or nil when none of them does.
func For(apiVersion, kind string) (*Schema, error) {
	all, err := load()
	if err != nil {
		return nil, err
	}
	return all[apiVersion+"/"+kind], nil
}

// Versions are the apiVersions (GROUP/VERSION) at which the CRDs serve kind of group; none
// when they do not define it. A resource of such a kind at another version is refused by the
// API server rather than ignored.
func Versions(group, kind string) ([]string, error) {
	all, err := loadVersions()
	if err != nil {
		return nil, err
	}
	return all[group+"/"+kind], nil
}

var (
	load         = sync.OnceValues(readSchemas)
	loadVersions = sync.OnceValues(readVersions)
)

// readSchemas reads every CRD of manifests/crds, keyed by GROUP/VERSION/KIND.
func readSchemas() (map[string]*Schema, error) {
	out := map[string]*Schema{}
	err := eachCRD(func(crd *apiextensionsv1.CustomResourceDefinition) error {
		for _, v := range crd.Spec.Versions {
			if !v.Served || v.Schema == nil {
				continue
			}
			s, err := newSchema(v.Schema)
			if err != nil {
				return fmt.Errorf("%s version %s: %w", crd.Name, v.Name, err)
			}
			out[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = s
		}
		return nil
	})
	return out, err
}

// readVersions lists the served versions of every kind of manifests/crds, keyed by GROUP/KIND.
func readVersions() (map[string][]string, error) {
	out := map[string][]string{}
	err := eachCRD(func(crd *apiextensionsv1.CustomResourceDefinition) error {
		for _, v := range crd.Spec.Versions {
			if v.Served {
				key := crd.Spec.Group + "/" + crd.Spec.Names.Kind
				out[key] = append(out[key], crd.Spec.Group+"/"+v.Name)
			}
		}
		return nil
	})
	return out, err
}

func eachCRD(fn func(*apiextensionsv1.CustomResourceDefinition) error) error {
	files, err := fs.Glob(crds.FS, "*.yaml")
	if err != nil {
		return err
	}
	for _, name := range files {
		data, err := fs.ReadFile(crds.FS, name)
		if err != nil {
			return err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := fn(&crd); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// newSchema builds the validation of one version as the API server's CRD handler does.
func newSchema(v *apiextensionsv1.CustomResourceValidation) (*Schema, error) {
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v, internal, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	return &Schema{structural: structural, validator: validator,
		rules: cel.NewValidator(structural, true, celconfig.PerCallLimit)}, nil
}
