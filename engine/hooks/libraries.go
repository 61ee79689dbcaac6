package hooks

import (
	"fmt"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/scripting"
)

// LibraryOf is the scripting form of a HookLibrary's or NamespacedHookLibrary's spec, its
// revision computed: the one conversion the engine and the offline commands share. A module
// must name exactly one language, and module names must be distinct.
func LibraryOf(name string, spec v1alpha1.HookLibrarySpec) (*scripting.Library, error) {
	mods := make(map[string]scripting.LibraryModule, len(spec.Modules))
	for i, m := range spec.Modules {
		if _, dup := mods[m.Name]; dup {
			return nil, fmt.Errorf("spec.modules[%d]: module %q is defined twice", i, m.Name)
		}
		switch {
		case (m.Starlark == "") == (m.JavaScript == ""):
			return nil, fmt.Errorf("spec.modules[%d] (%s): exactly one of starlark or javascript must be set", i, m.Name)
		case m.Starlark != "":
			mods[m.Name] = scripting.LibraryModule{Language: scripting.Starlark, Source: m.Starlark}
		default:
			mods[m.Name] = scripting.LibraryModule{Language: scripting.JavaScript, Source: m.JavaScript}
		}
	}
	return scripting.NewLibrary(name, mods), nil
}

// LibraryScope names where the hooks of a controller of namespace ns look libraries up, as
// scripting.Libraries.Scope words it: a cluster-scoped controller ("") loads HookLibraries,
// a namespaced one the NamespacedHookLibraries of its own namespace.
func LibraryScope(ns string) string {
	if ns == "" {
		return "HookLibrary"
	}
	return "NamespacedHookLibrary in namespace " + ns
}
