package engine

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"metascript.dev/metascript/engine/fairshare"
)

// flowEvents records the flow of each Event created through it.
type flowEvents struct {
	typedcorev1.EventInterface
	flows chan fairshare.Flow
}

func (f flowEvents) Create(ctx context.Context, e *corev1.Event, _ metav1.CreateOptions) (*corev1.Event, error) {
	f.flows <- fairshare.FlowOf(ctx)
	return e, nil
}

type flowEventsGetter struct{ flowEvents }

func (g flowEventsGetter) Events(string) typedcorev1.EventInterface { return g.flowEvents }

// TestEventsDrawAsTheirController: an Event a controller's recorder records is written with
// that controller's flow, one of the engine's own recorder with the engine's.
func TestEventsDrawAsTheirController(t *testing.T) {
	got := make(chan fairshare.Flow, 2)
	sink := &eventSink{events: flowEventsGetter{flowEvents{flows: got}}}
	b := record.NewBroadcaster()
	defer b.Shutdown()
	b.StartRecordingToSink(sink)
	f := fairshare.ControllerFlow("team-a", "namespacedcompositecontroller/team-a/bundles")
	parent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team-a"}}
	sink.recorder(b, f).Event(parent, corev1.EventTypeWarning, "HookFailed", "x")
	if flow := next(t, got); flow != f {
		t.Errorf("the controller's Event was written as %v, want %v", flow, f)
	}
	b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "metascript"}).Event(parent, corev1.EventTypeWarning, "Other", "y")
	if flow := next(t, got); flow != fairshare.EngineFlow {
		t.Errorf("the engine's Event was written as %v, want %v", flow, fairshare.EngineFlow)
	}
}

func next(t *testing.T, flows chan fairshare.Flow) fairshare.Flow {
	t.Helper()
	select {
	case f := <-flows:
		return f
	case <-time.After(30 * time.Second):
		t.Fatal("no Event written")
		return fairshare.Flow{}
	}
}
