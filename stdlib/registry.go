package stdlib

// All returns every module, in the order of the reference page. The slice is new on each
// call; the modules are shared and must not be modified.
func All() []*Module {
	return []*Module{JSON, YAML, Base64, Hash, Time, Strings, RE, K8s, Log}
}
