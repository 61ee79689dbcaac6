package convert

import "fmt"

// checkValues reports, and where Metascript's schema would refuse them removes, the values
// Metacontroller takes and Metascript does not.
func (c *converter) checkValues(at path, kind, name string, obj map[string]any) {
	spec, _ := obj["spec"].(map[string]any)
	hooks, _ := spec["hooks"].(map[string]any)
	syncVersion := version(hooks["sync"])
	for _, hook := range HookNames {
		h, _ := hooks[hook].(map[string]any)
		// A customize request has no keyed objects; finalize's are keyed as sync's.
		if v := version(h); hook == "finalize" && h != nil && v != syncVersion {
			c.report(at, name, path{"spec", "hooks", hook, "version"}, fmt.Sprintf("kept, but not followed: Metascript keys "+
				"the objects of finalize's request as hooks.sync's version says, so it gets %s keys, not %s", syncVersion, v))
		}
		w, ok := h["webhook"].(map[string]any)
		if !ok {
			continue
		}
		field := path{"spec", "hooks", hook, "webhook"}
		_, hasURL := w["url"]
		_, hasService := w["service"]
		switch {
		case hasURL && hasService:
			c.report(at, name, field.with("service"), "removed: Metacontroller calls the url and ignores service when both are set; "+
				"Metascript takes exactly one of them")
			delete(w, "service")
		case !hasURL && !hasService:
			c.report(at, name, field, "kept as written: it has neither url nor service, and Metascript needs exactly one of them")
		}
	}

	// Rolling updates are a CompositeController's; a decorator's attachments have none.
	if kind != "DecoratorController" {
		return
	}
	items, _ := spec["attachments"].([]any)
	for i, it := range items {
		rule, _ := it.(map[string]any)
		us, _ := rule["updateStrategy"].(map[string]any)
		method, _ := us["method"].(string)
		if method != "RollingRecreate" && method != "RollingInPlace" {
			continue
		}
		field := path{"spec", "attachments", i, "updateStrategy", "method"}
		c.report(at, name, field, fmt.Sprintf("removed: %s is a CompositeController's; attachments are updated OnDelete "+
			"(the default, now in effect), Recreate or InPlace", method))
		delete(us, "method")
	}
}

// version is the request key format a hook asks for; v1 when it says none.
func version(hook any) string {
	h, _ := hook.(map[string]any)
	if v, ok := h["version"].(string); ok && v != "" {
		return v
	}
	return "v1"
}
