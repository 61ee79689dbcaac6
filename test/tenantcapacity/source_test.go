package tenantcapacity

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestSourceBound: a controller whose hooks' source passes the engine's bound for one
// controller (256Ki here, as metascript run's default) is not compiled and does not run,
// and its status says why.
func TestSourceBound(t *testing.T) {
	source := "def sync(request):\n    return {}\n" + strings.Repeat("# "+strings.Repeat("x", 1000)+"\n", 300)
	obj := hungController("too-much-source", "http://unused.invalid")
	obj.Object["spec"].(map[string]any)["hooks"] = map[string]any{"sync": map[string]any{"starlark": map[string]any{"source": source}}}
	create(t, obj)
	t.Cleanup(func() { deleteController("too-much-source") })
	waitFor(t, time.Minute, "HooksCompiled=False", func() bool {
		return conditionReason("too-much-source", "HooksCompiled") == "SourceTooLarge"
	})
	if ready("too-much-source") {
		t.Fatal("a controller past the source bound runs")
	}
}

// conditionReason is the reason of the controller's condition typ, "" without one.
func conditionReason(name, typ string) string {
	u, err := env.Dynamic.Resource(controllers).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			r, _ := m["reason"].(string)
			return r
		}
	}
	return ""
}
