package integration

import (
	"fmt"
	"strings"
	"testing"

	"metascript.dev/metascript/engine/trace"
	"metascript.dev/metascript/test/enginetest"
)

// TestTraceRecordsReconciles: the engine's trace holds, for a parent, what triggered its
// reconciles, the sync call with its answer and what it used of its budget, and each write
// with its result.
func TestTraceRecordsReconciles(t *testing.T) {
	controller(t, "bundle-starlark.yaml")
	ns := env.Namespace(t)
	b := bundle(t, ns, "t1", "basic", "t1", "a=1", "b=2")
	waitValue(t, ns, "t1-b", "2")
	env.Patch(t, b, `{"spec":{"items":[{"name":"a","value":"1"}]}}`)
	waitGone(t, ns, "t1-b")
	enginetest.Eventually(t, wait, func() (bool, string) {
		recs := env.Engine.Trace.Records(trace.Query{Controller: "compositecontroller/bundle-starlark", Parent: ns + "/t1"})
		var text []string
		created, deleted, answered, parentTriggered := false, false, false, false
		for _, r := range recs {
			parentTriggered = parentTriggered || r.Trigger == "parent"
			for _, c := range r.Calls {
				answered = answered || c.Hook == "sync" && c.Form == "starlark" && strings.Contains(string(c.Answer), `"t1-a"`) &&
					c.Used.Steps > 0 && c.Used.Steps < c.Used.MaxSteps && c.Used.Timeout > 0
			}
			for _, w := range r.Writes {
				created = created || w.Operation == "created" && w.Object == "ConfigMap "+ns+"/t1-b" && w.Error == ""
				deleted = deleted || w.Operation == "deleted" && w.Object == "ConfigMap "+ns+"/t1-b" && w.Error == ""
				text = append(text, w.Operation+" "+w.Object)
			}
		}
		return created && deleted && answered && parentTriggered,
			fmt.Sprintf("%d records; created %v, deleted %v, sync answered with its budget use %v, a parent trigger %v; writes %v",
				len(recs), created, deleted, answered, parentTriggered, text)
	})
}
