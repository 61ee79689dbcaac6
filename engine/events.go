package engine

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"metascript.dev/metascript/engine/fairshare"
)

// eventSink writes the engine's Events, each with the flow of the controller that recorded
// it in its request's context, so that a tenant whose parents fail without end spends its own
// share of the engine's rate on its Events, not the engine's or another tenant's. A
// controller's recorder (recorder) names the controller as its Events' source host, which is
// how the sink knows whose an Event is. Safe for concurrent use.
type eventSink struct {
	events typedcorev1.EventsGetter
	flows  sync.Map // source host (a controller's ref) → fairshare.Flow
}

var _ record.EventSink = (*eventSink)(nil)

// recorder is the Event recorder of the controller of flow f, on broadcaster b.
func (s *eventSink) recorder(b record.EventBroadcaster, f fairshare.Flow) record.EventRecorder {
	s.flows.Store(f.Controller, f)
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "metascript", Host: f.Controller})
}

// ctx is the context of e's request: its controller's flow, or the engine's.
func (s *eventSink) ctx(e *corev1.Event) context.Context {
	if f, ok := s.flows.Load(e.Source.Host); ok {
		return fairshare.WithFlow(context.Background(), f.(fairshare.Flow))
	}
	return context.Background()
}

func (s *eventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	return s.events.Events(e.Namespace).Create(s.ctx(e), e, metav1.CreateOptions{})
}

func (s *eventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	return s.events.Events(e.Namespace).Update(s.ctx(e), e, metav1.UpdateOptions{})
}

func (s *eventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	return s.events.Events(e.Namespace).Patch(s.ctx(e), e.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}
