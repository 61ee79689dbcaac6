package javascript

import "github.com/dop251/goja"

func (cs *callState) installStdlib(g *goja.Object) {}
