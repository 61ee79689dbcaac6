package reconcile

import (
	"context"
	"log/slog"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// hookLog is the logger a hook call gets: the controller's, with the hook, the parent and,
// when set, what the call is about. Most calls log nothing, so the attributes are added to
// the handler only when a record is first handled: a call costs one allocation, not a
// handler clone with the attributes formatted.
type hookLog struct {
	logger slog.Logger // handled by this hookLog
	base   slog.Handler
	hook   string
	parent *unstructured.Unstructured
	about  string

	once sync.Once
	with slog.Handler // base with the attributes, once made
}

// newHookLog returns the logger of a call of hook for parent (about as in Call.About).
func newHookLog(base *slog.Logger, hook string, parent *unstructured.Unstructured, about string) *slog.Logger {
	l := &hookLog{base: base.Handler(), hook: hook, parent: parent, about: about}
	l.logger = *slog.New(l)
	return &l.logger
}

// handler is base with the call's attributes, as base.With would add them.
func (l *hookLog) handler() slog.Handler {
	l.once.Do(func() {
		attrs := []slog.Attr{slog.String("hook", l.hook), slog.String("parent", l.parent.GetNamespace()+"/"+l.parent.GetName())}
		if l.about != "" {
			attrs = append(attrs, slog.String("about", l.about))
		}
		l.with = l.base.WithAttrs(attrs)
	})
	return l.with
}

func (l *hookLog) Enabled(ctx context.Context, level slog.Level) bool {
	return l.base.Enabled(ctx, level)
}

func (l *hookLog) Handle(ctx context.Context, r slog.Record) error { return l.handler().Handle(ctx, r) }

func (l *hookLog) WithAttrs(attrs []slog.Attr) slog.Handler { return l.handler().WithAttrs(attrs) }

func (l *hookLog) WithGroup(name string) slog.Handler { return l.handler().WithGroup(name) }
