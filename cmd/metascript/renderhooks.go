package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"metascript.dev/metascript/engine/hooks"
)

// loggedHook is a hook of a rendered controller that logs its calls in a callLog, so that
// render can say which hooks the engine called and locate each failure.
type loggedHook struct {
	name string
	inv  hooks.Invoker
	log  *callLog
}

func (h *loggedHook) Invoke(ctx context.Context, req map[string]any, log *slog.Logger) (map[string]any, error) {
	resp, err := h.inv.Invoke(ctx, req, log)
	h.log.add(call{hook: h.name, about: aboutOf(h.name, req), err: err})
	return resp, err
}

func (h *loggedHook) Form() string { return h.inv.Form() }

// aboutOf names what a map or tombstone call is for, as the engine's Events do: the input
// ("PersistentVolumeClaim default/data"), or the detached map key. Other hooks' calls are for
// the parent: "".
func aboutOf(hook string, req map[string]any) string {
	switch hook {
	case "map":
		in, _ := req["input"].(map[string]any)
		meta, _ := in["metadata"].(map[string]any)
		kind, _ := in["kind"].(string)
		ns, _ := meta["namespace"].(string)
		name, _ := meta["name"].(string)
		if ns != "" {
			name = ns + "/" + name
		}
		return kind + " " + name
	case "tombstone":
		return fmt.Sprintf("detached map key %v", req["mapKey"])
	}
	return ""
}

// call is one hook call: which hook, for what, and its failure.
type call struct {
	hook, about string
	err         error
}

// callLog is the calls of one round. Safe for concurrent use (map calls run in parallel).
type callLog struct {
	mu    sync.Mutex
	calls []call
}

func (l *callLog) add(c call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, c)
}

func (l *callLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = nil
}

// called reports whether hook was called.
func (l *callLog) called(hook string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.calls, func(c call) bool { return c.hook == hook })
}

// failures are the failed calls, ordered by hook and what they were for.
func (l *callLog) failures() []call {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []call
	for _, c := range l.calls {
		if c.err != nil {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b call) int {
		return cmp.Or(strings.Compare(a.hook, b.hook), strings.Compare(a.about, b.about))
	})
	return out
}

// event is one Event the engine would record.
type event struct{ kind, reason, message string }

// eventLog is a record.EventRecorder keeping the Events of a render, to report them.
type eventLog struct {
	mu     sync.Mutex
	events []event
}

func (l *eventLog) Event(_ runtime.Object, kind, reason, message string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, event{kind, reason, message})
}

func (l *eventLog) Eventf(obj runtime.Object, kind, reason, format string, args ...any) {
	l.Event(obj, kind, reason, fmt.Sprintf(format, args...))
}

func (l *eventLog) AnnotatedEventf(obj runtime.Object, _ map[string]string, kind, reason, format string, args ...any) {
	l.Eventf(obj, kind, reason, format, args...)
}

// take returns the Warning Events recorded since the last take.
func (l *eventLog) take() []event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []event
	for _, e := range l.events {
		if e.kind == corev1.EventTypeWarning {
			out = append(out, e)
		}
	}
	l.events = nil
	return out
}
