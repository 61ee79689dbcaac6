package main

import (
	"errors"
	"fmt"
	"strings"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/cmd/metascript/internal/manifest"
	"metascript.dev/metascript/cmd/metascript/internal/yamlpos"
	"metascript.dev/metascript/scripting"
)

// library checks a HookLibrary or NamespacedHookLibrary: against its CRD as the API server
// would, then every module compiled as the engine compiles it for the library's Compiled
// condition, each error placed at its position in the file when the module's source is a
// literal block.
func (fc *fileCheck) library(doc *yamlpos.Document, obj map[string]any) {
	before := len(fc.found)
	fc.resource(doc, obj, v1alpha1.GroupVersion.Group)
	if len(fc.found) > before {
		return // the engine would not see it
	}
	l, err := manifest.ReadLibrary(fc.path, doc.Position("").Line, obj)
	if err != nil {
		fc.add(finding{pos: doc.Position(""), ref: refOf(obj), msg: err.Error()})
		return
	}
	err = fc.rt.CompileLibrary(l.Library)
	if err == nil {
		return
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		fc.add(fc.moduleFinding(doc, obj, l.Library, e))
	}
}

// moduleFinding places the compile error of one module of lib at the module's source.
func (fc *fileCheck) moduleFinding(doc *yamlpos.Document, obj map[string]any, lib *scripting.Library, err error) finding {
	ref := refOf(obj)
	var ce *scripting.CompileError
	if !errors.As(err, &ce) {
		return finding{pos: doc.Position("spec.modules"), ref: ref, field: "spec.modules", msg: err.Error()}
	}
	module := strings.TrimSuffix(strings.TrimPrefix(ce.File, scripting.LibraryPrefix+lib.Name+"/"), ".star")
	spec, _ := obj["spec"].(map[string]any)
	mods, _ := spec["modules"].([]any)
	for i, m := range mods {
		if mm, _ := m.(map[string]any); mm["name"] == module {
			field := fmt.Sprintf("spec.modules[%d].%s", i, ce.Language)
			if pos, ok := doc.Source(field, ce.Line, ce.Column); ok {
				return finding{pos: pos, ref: ref, field: field, msg: ce.Msg}
			}
			return finding{pos: doc.Position(field), ref: ref, field: field, msg: err.Error()}
		}
	}
	return finding{pos: doc.Position("spec.modules"), ref: ref, field: "spec.modules", msg: err.Error()}
}
