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
	var calls arrivals
	var busy atomic.Bool
	busy.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if busy.Load() {
			calls.add()
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
	calls.waitSpaced(t, 4, "of the parent")
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

// arrivals records when calls arrive; safe for concurrent use.
type arrivals struct {
	mu    sync.Mutex
	times []time.Time
}

func (a *arrivals) add() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.times = append(a.times, time.Now())
}

// waitSpaced waits for n calls and fails the test unless, from the third on, each came at
// least two seconds (Retry-After: 2) after the one before. The first gap may be shorter:
// an event of the parent (its creation racing the first call) calls it at once. Gaps only
// grow on a slow machine; 100ms less than two seconds leaves room for clock reading, nothing
// near the failure backoff's pace (5ms, doubling).
func (a *arrivals) waitSpaced(t *testing.T, n int, what string) {
	t.Helper()
	var arrived []time.Time
	enginetest.Eventually(t, 3*wait, func() (bool, string) {
		a.mu.Lock()
		defer a.mu.Unlock()
		arrived = append(arrived[:0], a.times...)
		return len(arrived) >= n, fmt.Sprintf("%d calls %s", len(arrived), what)
	})
	for i := 2; i < len(arrived); i++ {
		if gap := arrived[i].Sub(arrived[i-1]); gap < 1900*time.Millisecond {
			t.Fatalf("call %d %s came %v after the one before: Retry-After: 2 was not honoured (calls at %v)", i+1, what, gap, arrived)
		}
	}
}
