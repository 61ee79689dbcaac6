package admission

import (
	"context"
	"fmt"
	"testing"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/kinds"
	"metascript.dev/metascript/scripting"
)

// BenchmarkCheck is one review's work for the first controller of testdata/valid.yaml: with
// the same source every time (the compile cache answers, as for a re-applied controller),
// and with a new source each time (a changed hook, compiled).
func BenchmarkCheck(b *testing.B) {
	obj := fixtures(b, "valid.yaml")[0]
	kind := kinds.Lookup(obj["kind"].(string))
	opts := Options{Compiler: engine.NewRuntime(scripting.Options{}), Ceilings: &ceilings}
	sync := obj["spec"].(map[string]any)["hooks"].(map[string]any)["sync"].(map[string]any)["starlark"].(map[string]any)
	source := sync["source"].(string)
	for _, changed := range []bool{false, true} {
		b.Run(fmt.Sprintf("changed=%v", changed), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if changed {
					sync["source"] = fmt.Sprintf("%s# %d\n", source, i)
				}
				if p := Check(context.Background(), kind, obj, opts); len(p) > 0 {
					b.Fatal(p)
				}
			}
		})
	}
}
