package admission

import (
	"metascript.dev/metascript/engine/reconcile"
)

// confinement returns a namespaced controller's references to ConfigMaps and Secrets of
// another namespace (reconcile.References), which the engine refuses to read
// (reconcile.ReferenceNamespace).
func confinement(kind *reconcile.Descriptor, decl *reconcile.Declared, ref string) []Problem {
	var out []Problem
	for _, r := range reconcile.References(kind, decl) {
		if _, err := reconcile.ReferenceNamespace(decl.Namespace, r.Kind, r.Namespace, r.Name); err != nil {
			out = append(out, Problem{Field: r.Field + ".namespace", Ref: ref, Err: err})
		}
	}
	return out
}
