package stdlib_test

import "metascript.dev/metascript/scripting/starlark"

func init() { compilers[starlark.NewCompiler().Language()] = starlark.NewCompiler() }
