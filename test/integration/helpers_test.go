package integration

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"metascript.dev/metascript/test/enginetest"
)

// editController reads a CompositeController, lets edit change it, and updates it, again on
// a conflict: the engine writes the controller's status concurrently.
func editController(t *testing.T, name string, edit func(*unstructured.Unstructured)) {
	t.Helper()
	editControllerOf(t, "CompositeController", name, edit)
}

// editControllerOf is editController for a controller resource of any kind.
func editControllerOf(t *testing.T, kind, name string, edit func(*unstructured.Unstructured)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := env.Get(t, "metascript.dev/v1alpha1", kind, "", name)
		edit(cur)
		_, err := env.Client(t, cur).Update(t.Context(), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// conditionMessage is the message of the condition of type typ in obj's status.conditions.
func conditionMessage(obj *unstructured.Unstructured, typ string) string {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["message"].(string)
			return s
		}
	}
	return ""
}

// conditionReason is the reason of the condition of type typ in obj's status.conditions.
func conditionReason(obj *unstructured.Unstructured, typ string) string {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["reason"].(string)
			return s
		}
	}
	return ""
}

// The helpers below replace fixed sleeps. A "nothing happened" assertion is only worth
// something once the engine has demonstrably seen the change and finished what it did about
// it: they wait for that, through the engine's own metrics (engine/metrics), with generous
// timeouts instead of guesses.

// queueCounts reads the work queue metrics of the queue named name (a controller's, such as
// "compositecontroller/bundle-starlark", or the manager's "controllers"): keys added (a key
// added again while queued counts once), keys done, and keys waiting.
func queueCounts(t *testing.T, name string) (adds, done, depth float64) {
	t.Helper()
	families, err := env.Engine.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if !hasLabel(m, "name", name) {
				continue
			}
			switch f.GetName() {
			case "metascript_workqueue_adds_total":
				adds = m.GetCounter().GetValue()
			case "metascript_workqueue_work_duration_seconds":
				done = float64(m.GetHistogram().GetSampleCount())
			case "metascript_workqueue_depth":
				depth = m.GetGauge().GetValue()
			}
		}
	}
	return adds, done, depth
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// idle reports whether the work queue name holds no key and every key it handed out is done:
// no reconcile is queued or running. (A retry or resync waiting for its delay is not in the
// queue yet.)
func idle(t *testing.T, name string) (bool, string) {
	adds, done, depth := queueCounts(t, name)
	return depth == 0 && adds == done, fmt.Sprintf("queue %s: %v added, %v done, %v waiting", name, adds, done, depth)
}

// waitIdle waits until controller ctl has nothing queued or running.
func waitIdle(t *testing.T, ctl string) {
	t.Helper()
	enginetest.Eventually(t, wait, func() (bool, string) { return idle(t, ctl) })
}

// reconciles is how many reconciles of controller ctl ended with result (success|error).
func reconciles(ctl, result string) float64 {
	return testutil.ToFloat64(env.Engine.Metrics.Reconciles.WithLabelValues(ctl, result))
}

// hookCalls is how many calls of a controller's hook, in form (starlark, javascript,
// webhook), ended with result (success|error|budget|invalid).
func hookCalls(ctl, hook, form, result string) float64 {
	return testutil.ToFloat64(env.Engine.Metrics.HookInvocations.WithLabelValues(ctl, hook, form, result))
}

// actedOn waits until controller ctl is idle, runs touch, and waits until at least n more
// reconciles of ctl have succeeded and it is idle again: the engine has reconciled what touch
// changed (touch must change n parents, each in a way that reconciles it) and finished.
func actedOn(t *testing.T, ctl string, n int, touch func()) {
	t.Helper()
	waitIdle(t, ctl)
	before := reconciles(ctl, "success")
	touch()
	enginetest.Eventually(t, wait, func() (bool, string) {
		done := reconciles(ctl, "success") - before
		ok, msg := idle(t, ctl)
		return done >= float64(n) && ok, fmt.Sprintf("%v of %d reconciles; %s", done, n, msg)
	})
}

// failedAfter runs touch and waits until a reconcile of controller ctl has failed since:
// whatever that reconcile would have written, it has sent by then.
func failedAfter(t *testing.T, ctl string, touch func()) {
	t.Helper()
	before := reconciles(ctl, "error")
	touch()
	enginetest.Eventually(t, wait, func() (bool, string) {
		n := reconciles(ctl, "error")
		return n > before, fmt.Sprintf("no failed reconcile of %s yet", ctl)
	})
}

// waitControllerReady waits until the controller resource of kind named name is Ready for its
// current generation: its runner has started and its caches are synced.
func waitControllerReady(t *testing.T, kind, name string) {
	t.Helper()
	waitControllerReadyIn(t, kind, "", name)
}

// waitControllerReadyIn is waitControllerReady for a namespaced kind's controller in ns.
func waitControllerReadyIn(t *testing.T, kind, ns, name string) {
	t.Helper()
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := env.Get(t, "metascript.dev/v1alpha1", kind, ns, name)
		g, _, _ := unstructured.NestedInt64(cur.Object, "status", "observedGeneration")
		return g == cur.GetGeneration() && enginetest.Condition(cur, "Ready") == "True",
			fmt.Sprintf("%s %s status %v", kind, name, cur.Object["status"])
	})
}

// controllerKinds are the controller resources the manager runs.
var controllerKinds = []string{"CompositeController", "DecoratorController", "MapController",
	"NamespacedCompositeController", "NamespacedDecoratorController", "NamespacedMapController"}

// waitManagerSettled waits until the manager runs, or has given up on, exactly the controller
// resources that exist: a deleted controller's runner has stopped (its metric drops only
// once Stop has returned), and every existing one was handled.
func waitManagerSettled(t *testing.T) {
	t.Helper()
	enginetest.Eventually(t, wait, func() (bool, string) {
		exist := 0
		for _, kind := range controllerKinds {
			gvr, _ := env.Resource(t, "metascript.dev/v1alpha1", kind)
			list, err := env.Dynamic.Resource(gvr).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			exist += len(list.Items)
		}
		m := env.Engine.Metrics.Controllers
		handled := testutil.ToFloat64(m.WithLabelValues("running")) + testutil.ToFloat64(m.WithLabelValues("failed"))
		return handled == float64(exist), fmt.Sprintf("%d controller resources, %v handled by the manager", exist, handled)
	})
}

// witness installs testdata/witness.yaml named name, which decorates with nothing the
// Bundles labelled test.metascript.dev/witness=name, and returns the name of its work queue
// and metrics: actedOn(t, witness, ...) then proves that a change of such a Bundle reached the
// engine, where another controller is expected to ignore it.
func witness(t *testing.T, name string) string {
	t.Helper()
	w := controller(t, "witness.yaml", "NAME", name)
	waitControllerReady(t, "DecoratorController", w.GetName())
	return "decoratorcontroller/" + w.GetName()
}

// witnessed labels obj for the witness named name.
func witnessed(t *testing.T, obj *unstructured.Unstructured, name string) *unstructured.Unstructured {
	t.Helper()
	return env.Patch(t, obj, fmt.Sprintf(`{"metadata":{"labels":{"test.metascript.dev/witness":%q}}}`, name))
}

// waitCounts waits until the status of the controller resource of kind named name counts
// parents and children: the engine refreshes these counts on their own tick, so a test that
// counts the engine's writes waits for them to be current first.
func waitCounts(t *testing.T, kind, name string, parents, children int64) {
	t.Helper()
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := env.Get(t, "metascript.dev/v1alpha1", kind, "", name)
		p, _, _ := unstructured.NestedInt64(cur.Object, "status", "parents")
		c, _, _ := unstructured.NestedInt64(cur.Object, "status", "children")
		return p == parents && c == children, fmt.Sprintf("%s %s counts %d parents and %d children, want %d and %d",
			kind, name, p, c, parents, children)
	})
}
