package stdlib_test

import "metascript.dev/metascript/scripting/javascript"

func init() { compilers[javascript.Compiler{}.Language()] = javascript.Compiler{} }
