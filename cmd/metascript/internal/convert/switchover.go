package convert

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/composite"
	"metascript.dev/metascript/engine/decorator"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/kinds"
)

// Switchover is what one controller asks of its user when it moves over from Metacontroller
// (docs/migration.md, Switching over), and what its webhooks point at: the hook server that
// becomes unnecessary once every hook is inline.
type Switchover struct {
	File string
	Line int
	Ref  string
	// Steps are the switch-over hazards that apply to a controller converted from
	// Metacontroller, one line each: finalizer, label, annotation, field ownership.
	Steps []string
	// HookServer says what the webhooks (as they were before --inline) point at and whether
	// any hook still needs it; empty when the controller had no webhook.
	HookServer []string
}

// Metacontroller's names for what Metascript writes under other names (docs/migration.md).
const (
	mcFinalizerPrefix = "metacontroller.io/"
	mcUIDLabel        = "controller-uid"
	mcDecoratorMark   = "metacontroller.k8s.io/decorator-controller"
)

// switchover says what obj, a controller of kind, asks for: the switch-over steps when it
// was converted from Metacontroller (fromMetacontroller), and what webhooks, its webhook
// hooks by name before --inline replaced any, point at.
func switchover(kind string, obj map[string]any, fromMetacontroller bool, webhooks map[string]*v1alpha1.Webhook) Switchover {
	spec, _ := obj["spec"].(map[string]any)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	s := Switchover{Ref: ref(kind, obj)}
	if fromMetacontroller {
		s.Steps = steps(kind, name, spec)
	}
	s.HookServer = hookServer(spec, webhooks)
	return s
}

// steps are the switch-over hazards of a controller called name.
func steps(kind, name string, spec map[string]any) []string {
	d := kinds.Lookup(kind)
	hooks, _ := spec["hooks"].(map[string]any)
	var out []string
	if _, ok := hooks["finalize"]; ok {
		parents := "parent (" + rules(spec, "parentResource") + ")"
		if kind == "DecoratorController" {
			parents = "target (" + rules(spec, "resources") + ")"
		}
		out = append(out, fmt.Sprintf("finalizer: remove %s%s-%s from every %s, or one being deleted waits "+
			"for it forever; Metascript adds %s%s", mcFinalizerPrefix, strings.ToLower(kind), name, parents, d.FinalizerPrefix, name))
	}
	if kind == "CompositeController" && spec["generateSelector"] == true {
		out = append(out, fmt.Sprintf("label: give every child (%s) the label %s=<parent UID>, where Metacontroller used %s; "+
			"a child without it is released", rules(spec, "childResources"), composite.ControllerUIDLabel, mcUIDLabel))
	}
	if kind == "DecoratorController" && rules(spec, "attachments") != "none" {
		out = append(out, fmt.Sprintf("annotation: give every attachment (%s) the annotation %s=%s, where Metacontroller used %s; "+
			"Metascript leaves an attachment without it alone", rules(spec, "attachments"), decorator.MarkAnnotation, name, mcDecoratorMark))
	}
	manager := apply.FieldManager(d.FieldManagerPrefix + name)
	switch kind {
	case "CompositeController":
		out = append(out, fmt.Sprintf("field ownership: Metascript applies children as %s; a field Metacontroller wrote "+
			"and the hooks stop returning stays: recreate the child or remove the field once by hand", manager))
	case "DecoratorController":
		out = append(out, fmt.Sprintf("field ownership: Metascript applies as %s; labels and annotations Metacontroller "+
			"set on targets stay unless the hooks return them as null, and a field of an attachment the hooks stop "+
			"returning stays: remove it once by hand", manager))
	}
	return out
}

// hookServer lists the Services the webhooks address, the Secrets and ConfigMaps their
// connections read, and which hooks are still webhooks in spec.
func hookServer(spec map[string]any, webhooks map[string]*v1alpha1.Webhook) []string {
	if len(webhooks) == 0 {
		return nil
	}
	specHooks, _ := spec["hooks"].(map[string]any)
	var targets []string             // Services and other hosts, in the order of the hooks
	callers := map[string][]string{} // the hooks calling each target
	var secrets, configMaps, still []string
	add := func(list *[]string, v string) {
		if v != "" && !slices.Contains(*list, v) {
			*list = append(*list, v)
		}
	}
	for _, hook := range HookNames {
		w := webhooks[hook]
		if w == nil {
			continue
		}
		if h, _ := specHooks[hook].(map[string]any); h["webhook"] != nil {
			still = append(still, hook)
		}
		target := "an unusable address"
		if svc, host := serviceOf(w); svc != "" {
			target = "Service " + svc
		} else if host != "" {
			target = host + " (not a Service of the cluster)"
		}
		add(&targets, target)
		callers[target] = append(callers[target], hook)
		connectionRefs(w.WebhookConnection, func(s string) { add(&secrets, s) }, func(c string) { add(&configMaps, c) })
	}
	var endpoints []v1alpha1.EndpointConfig
	if decodeLoosely(spec["endpointConfigs"], &endpoints) == nil {
		for _, e := range endpoints {
			connectionRefs(e.WebhookConnection, func(s string) { add(&secrets, s) }, func(c string) { add(&configMaps, c) })
		}
	}
	var out []string
	for _, t := range targets {
		verb := "call"
		if len(callers[t]) == 1 {
			verb = "calls"
		}
		out = append(out, fmt.Sprintf("%s %s %s", strings.Join(callers[t], ", "), verb, t))
	}
	if len(secrets) > 0 || len(configMaps) > 0 {
		var named []string
		for _, s := range secrets {
			named = append(named, "Secret "+s)
		}
		for _, c := range configMaps {
			named = append(named, "ConfigMap "+c)
		}
		out = append(out, "their connections read "+strings.Join(named, ", "))
	}
	if len(still) > 0 {
		out = append(out, "still needed by "+strings.Join(still, ", ")+"; once every hook is inline, the hook server "+
			"(its Deployment, the Services and Secrets above) is unnecessary for this controller")
	} else {
		out = append(out, "every hook is inline: the hook server (its Deployment, the Services and Secrets above) is "+
			"unnecessary for this controller")
	}
	return out
}

// serviceOf names the Service a webhook calls, namespace/name: its service, or the Service
// its url's host names in cluster DNS (name.namespace, name.namespace.svc[.cluster.local]).
// Otherwise it returns the url's host.
func serviceOf(w *v1alpha1.Webhook) (service, host string) {
	if w.Service != nil {
		return w.Service.Namespace + "/" + w.Service.Name, ""
	}
	address, err := hooks.WebhookURL(w)
	if err != nil {
		return "", ""
	}
	u, err := url.Parse(address)
	if err != nil {
		return "", address
	}
	labels := strings.Split(u.Hostname(), ".")
	if len(labels) == 2 || len(labels) >= 3 && labels[2] == "svc" {
		return labels[1] + "/" + labels[0], ""
	}
	return "", u.Host
}

// connectionRefs hands secret and configMap the Secrets and ConfigMaps c reads,
// namespace/name.
func connectionRefs(c v1alpha1.WebhookConnection, secret, configMap func(string)) {
	if b := c.CABundle; b != nil {
		if b.SecretRef != nil {
			secret(b.SecretRef.Namespace + "/" + b.SecretRef.Name)
		}
		if b.ConfigMapRef != nil {
			configMap(b.ConfigMapRef.Namespace + "/" + b.ConfigMapRef.Name)
		}
	}
	if a := c.Authorization; a != nil {
		secret(a.SecretRef.Namespace + "/" + a.SecretRef.Name)
	}
	if b := c.BasicAuth; b != nil {
		secret(b.SecretRef.Namespace + "/" + b.SecretRef.Name)
	}
	if t := c.ClientTLS; t != nil {
		secret(t.SecretRef.Namespace + "/" + t.SecretRef.Name)
	}
}

// webhooksOf returns the webhook hooks of a controller's spec, by hook name, decoded as
// Metascript's fields; a webhook that does not decode is left out (the checks report it).
func webhooksOf(spec map[string]any) map[string]*v1alpha1.Webhook {
	out := map[string]*v1alpha1.Webhook{}
	hooks, _ := spec["hooks"].(map[string]any)
	for _, hook := range HookNames {
		h, _ := hooks[hook].(map[string]any)
		if h["webhook"] == nil {
			continue
		}
		var w v1alpha1.Webhook
		if decodeLoosely(h["webhook"], &w) == nil {
			out[hook] = &w
		}
	}
	return out
}

// decodeLoosely decodes a JSON-shaped value into v, ignoring fields v does not have.
func decodeLoosely(value, v any) error {
	data, err := json.Marshal(value)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
