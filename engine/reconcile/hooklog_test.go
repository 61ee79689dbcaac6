package reconcile

import (
	"bytes"
	"log/slog"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestHookLogIsWith checks that a hook call's logger writes what the controller's logger
// with the call's attributes writes, including through loggers derived from it, and that
// it leaves out what the controller's level leaves out.
func TestHookLogIsWith(t *testing.T) {
	parent := &unstructured.Unstructured{}
	parent.SetNamespace("ns")
	parent.SetName("p")
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	for _, about := range []string{"", "input a"} {
		var lazy, eager bytes.Buffer
		base := func(buf *bytes.Buffer) *slog.Logger {
			return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: noTime})).
				With("controller", "c")
		}
		got := newHookLog(base(&lazy), "sync", parent, about)
		want := base(&eager).With("hook", "sync", "parent", "ns/p")
		if about != "" {
			want = want.With("about", about)
		}
		for _, l := range []*slog.Logger{got, want} {
			l.Info("hello", "n", 1)
			l.Debug("not shown")
			l.With("k", "v").WithGroup("g").Warn("derived", "x", true)
		}
		if lazy.String() != eager.String() {
			t.Errorf("about %q:\n%s\nwant\n%s", about, lazy.String(), eager.String())
		}
		if !bytes.Contains(lazy.Bytes(), []byte("hook=sync parent=ns/p")) {
			t.Errorf("about %q: no call attributes in\n%s", about, lazy.String())
		}
	}
}
