package stdlib_test

import "metascript.dev/metascript/stdlib"

func modules() []string {
	var names []string
	for _, m := range stdlib.All() {
		names = append(names, m.Name)
	}
	return names
}
