package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"metascript.dev/metascript/test/enginetest"
)

// TestWebhookRetryAfterDefersParent: while the endpoint answers 429 with Retry-After: 2, the
// parent is called again every two seconds, not at the failure backoff's pace, with a Normal
// HookBackoff Event and no HookFailed Warning; once the endpoint answers, it converges.
func TestWebhookRetryAfterDefersParent(t *testing.T) {
	var calls atomic.Int64
	var busy atomic.Bool
	busy.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if busy.Load() {
			w.Header().Set("Retry-After", "2")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		syncBundle(w, r)
	}))
	defer srv.Close()
	controller(t, "webhook-retry.yaml", "WEBHOOK_URL", srv.URL)
	ns := env.Namespace(t)
	bundle(t, ns, "p", "webhook-retry", "p", "a=1")
	enginetest.Eventually(t, wait, func() (bool, string) { return calls.Load() > 0, "the hook was not called" })
	// The failure backoff (5ms, doubling) would call a dozen times in 3.5s; two seconds
	// apart makes two calls, or three with the parent's creation racing the first.
	time.Sleep(3500 * time.Millisecond)
	if n := calls.Load(); n > 3 {
		t.Fatalf("%d calls in 3.5s: Retry-After: 2 was not honoured", n)
	}
	ev := env.Events(t, ns, "p")
	if len(ev["HookFailed"]) > 0 {
		t.Fatalf("HookFailed Warnings for a 429 with Retry-After: %v", ev["HookFailed"])
	}
	if len(ev["HookBackoff"]) == 0 || !strings.Contains(ev["HookBackoff"][0], "HTTP 429") {
		t.Fatalf("no HookBackoff Event naming the 429; events %v", ev)
	}
	busy.Store(false)
	waitValue(t, ns, "p-a", "1")
	enginetest.Eventually(t, wait, func() (bool, string) {
		st, _ := getBundle(t, ns, "p").Object["status"].(map[string]any)
		return st != nil, fmt.Sprintf("status %v", st)
	})
}
