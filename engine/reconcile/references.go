package reconcile

import (
	"fmt"

	"metascript.dev/metascript/apis/v1alpha1"
)

// Reference is an object of the cluster that a controller's spec names for its hooks to be
// built from: a ConfigMap or a Secret.
type Reference struct {
	// Field is where the spec names it, relative to spec:
	// hooks.sync.webhook.authorization.secretRef, endpointConfigs[0].caBundle.configMapRef.
	Field string
	// Kind is ConfigMap or Secret.
	Kind string
	// Namespace is as written: empty in a namespaced controller means its own
	// (ReferenceNamespace).
	Namespace, Name string
}

// References lists every ConfigMap and Secret a controller's spec names, whether or not a
// build reads it: hook and shared-script sources (configMapRef); webhooks' CA bundles
// (secretRef, configMapRef), authorization, basicAuth and clientTLS Secrets; and the same
// in every endpointConfigs entry. The manager checks the controller's account against them
// before its hooks are built, and admission refuses the ones naming another namespace.
func References(kind *Descriptor, decl *Declared) []Reference {
	var out []Reference
	add := func(field, kind, namespace, name string) {
		out = append(out, Reference{Field: field, Kind: kind, Namespace: namespace, Name: name})
	}
	source := func(field string, r *v1alpha1.ConfigMapKeyRef) {
		if r != nil {
			add(field+".configMapRef", "ConfigMap", r.Namespace, r.Name)
		}
	}
	connection := func(field string, c *v1alpha1.WebhookConnection) {
		if b := c.CABundle; b != nil {
			if r := b.SecretRef; r != nil {
				add(field+".caBundle.secretRef", "Secret", r.Namespace, r.Name)
			}
			if r := b.ConfigMapRef; r != nil {
				add(field+".caBundle.configMapRef", "ConfigMap", r.Namespace, r.Name)
			}
		}
		if a := c.Authorization; a != nil {
			add(field+".authorization.secretRef", "Secret", a.SecretRef.Namespace, a.SecretRef.Name)
		}
		if a := c.BasicAuth; a != nil {
			add(field+".basicAuth.secretRef", "Secret", a.SecretRef.Namespace, a.SecretRef.Name)
		}
		if t := c.ClientTLS; t != nil {
			add(field+".clientTLS.secretRef", "Secret", t.SecretRef.Namespace, t.SecretRef.Name)
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
