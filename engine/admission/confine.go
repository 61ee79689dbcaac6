package admission

import (
	"fmt"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/reconcile"
)

// confinement returns a namespaced controller's references to ConfigMaps and Secrets of
// another namespace (hook sources, webhook CA bundles, credentials, client certificates,
// endpointConfigs), which the engine refuses to read (reconcile.ReferenceNamespace).
func confinement(kind *reconcile.Descriptor, decl *reconcile.Declared, ref string) []Problem {
	var out []Problem
	check := func(field, kind, namespace, name string) {
		if _, err := reconcile.ReferenceNamespace(decl.Namespace, kind, namespace, name); err != nil {
			out = append(out, Problem{Field: field + ".namespace", Ref: ref, Err: err})
		}
	}
	source := func(field string, r *v1alpha1.ConfigMapKeyRef) {
		if r != nil {
			check(field+".configMapRef", "ConfigMap", r.Namespace, r.Name)
		}
	}
	connection := func(field string, c *v1alpha1.WebhookConnection) {
		if b := c.CABundle; b != nil {
			if r := b.SecretRef; r != nil {
				check(field+".caBundle.secretRef", "Secret", r.Namespace, r.Name)
			}
			if r := b.ConfigMapRef; r != nil {
				check(field+".caBundle.configMapRef", "ConfigMap", r.Namespace, r.Name)
			}
		}
		if a := c.Authorization; a != nil {
			check(field+".authorization.secretRef", "Secret", a.SecretRef.Namespace, a.SecretRef.Name)
		}
		if a := c.BasicAuth; a != nil {
			check(field+".basicAuth.secretRef", "Secret", a.SecretRef.Namespace, a.SecretRef.Name)
		}
		if t := c.ClientTLS; t != nil {
			check(field+".clientTLS.secretRef", "Secret", t.SecretRef.Namespace, t.SecretRef.Name)
		}
	}
	if sh := decl.Script; sh != nil {
		if sh.Starlark != nil {
			source("script.starlark", sh.Starlark.ConfigMapRef)
		}
		if sh.JavaScript != nil {
			source("script.javascript", sh.JavaScript.ConfigMapRef)
		}
	}
	for _, hook := range kind.Hooks {
		h, field := decl.Hooks[hook.Name], "hooks."+hook.Name
		if h == nil {
			continue
		}
		if h.Starlark != nil {
			source(field+".starlark", h.Starlark.ConfigMapRef)
		}
		if h.JavaScript != nil {
			source(field+".javascript", h.JavaScript.ConfigMapRef)
		}
		if h.Webhook != nil {
			connection(field+".webhook", &h.Webhook.WebhookConnection)
		}
	}
	for i := range decl.EndpointConfigs {
		connection(fmt.Sprintf("endpointConfigs[%d]", i), &decl.EndpointConfigs[i].WebhookConnection)
	}
	return out
}
