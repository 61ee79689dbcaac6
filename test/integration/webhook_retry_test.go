package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"metascript.dev/metascript/test/enginetest"
)

// TestWebhookRetryAfterDefersParent: while the endpoint answers 429 with Retry-After: 2, the
// parent is called again two seconds after each answer, not at the failure backoff's pace,
// with a Normal HookBackoff Event and no HookFailed Warning; once the endpoint answers, it
// converges.
func TestWebhookRetryAfterDefersParent(t *testing.T) {
	var mu sync.Mutex
	var calls []time.Time // when each call arrived
	var busy atomic.Bool
	busy.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if busy.Load() {
			mu.Lock()
			calls = append(calls, time.Now())
			mu.Unlock()
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
	// The failure backoff (5ms, doubling) would make a call every few milliseconds; under
	// Retry-After, each call comes at least two seconds after the answer before it. The first
	// gap may be shorter: an event of the parent (its creation racing the first call) calls
	// it at once. Gaps only grow on a slow machine; 100ms less than two seconds leaves room
	// for clock reading, nothing near the backoff's pace.
	var arrived []time.Time
	enginetest.Eventually(t, 3*wait, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		arrived = append(arrived[:0], calls...)
		return len(arrived) >= 4, fmt.Sprintf("%d calls", len(arrived))
	})
	for i := 2; i < len(arrived); i++ {
		if gap := arrived[i].Sub(arrived[i-1]); gap < 1900*time.Millisecond {
			t.Fatalf("call %d came %v after the one before: Retry-After: 2 was not honoured (calls at %v)", i+1, gap, arrived)
		}
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
