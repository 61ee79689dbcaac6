package hooks

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"metascript.dev/metascript/engine/fairshare"
)

// answerServer answers every call with a JSON object of about size bytes, with or without a
// Content-Length.
func answerServer(t *testing.T, size int, chunked bool) *httptest.Server {
	t.Helper()
	body := fmt.Sprintf(`{"status":{"blob":%q}}`, strings.Repeat("x", max(size-20, 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !chunked {
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		}
		fmt.Fprint(w, body)
		if chunked {
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestWebhookAnswerLimit: a response larger than MaxResponse is refused, whether its size is
// announced or not; one within it is decoded.
func TestWebhookAnswerLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
		refused bool
	}{
		{"within, announced", 900, false, false},
		{"within, chunked", 900, true, false},
		{"over, announced", 5000, false, true},
		{"over, chunked", 5000, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := answerServer(t, tc.size, tc.chunked)
			w := &Webhook{URL: srv.URL, Timeout: 5 * time.Second, Client: srv.Client(), MaxResponse: 1000}
			_, err := w.Invoke(context.Background(), map[string]any{}, nil)
			if tc.refused != (err != nil) {
				t.Fatalf("Invoke = %v, refused %v", err, tc.refused)
			}
			if tc.refused && !strings.Contains(err.Error(), "larger than the engine takes of one answer") {
				t.Errorf("error %q does not say the answer is too large", err)
			}
		})
	}
}

// TestWebhookAnswerMemory: an answer's room is held until the reconcile's holdings are
// released, and a call waits for room while others hold it all.
func TestWebhookAnswerMemory(t *testing.T) {
	srv := answerServer(t, 600, false)
	memory := fairshare.NewBytes(1000)
	w := &Webhook{URL: srv.URL, Timeout: 5 * time.Second, Client: srv.Client(), MaxResponse: 1000, Memory: memory}
	flow := fairshare.Flow{Tenant: "a", Controller: "a"}
	holdings := &fairshare.Holdings{}
	ctx := fairshare.WithHoldings(fairshare.WithFlow(context.Background(), flow), holdings)
	if _, err := w.Invoke(ctx, map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	all, by := memory.Held("a")
	if by < 600 || by != all {
		t.Fatalf("held %d, by a %d; want the answer's size held by a", all, by)
	}
	// 400 left: a second answer of 600 waits.
	short, cancel := context.WithTimeout(fairshare.WithFlow(context.Background(), flow), 50*time.Millisecond)
	defer cancel()
	if _, err := w.Invoke(short, map[string]any{}, nil); err == nil || !strings.Contains(err.Error(), "waiting for room") {
		t.Fatalf("Invoke without room = %v, want it to wait and give up", err)
	}
	holdings.Release()
	if all, _ := memory.Held(""); all != 0 {
		t.Fatalf("%d bytes held after the reconcile ended", all)
	}
	// Without holdings, the room is given back as Invoke returns.
	if _, err := w.Invoke(context.Background(), map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	if all, _ := memory.Held(""); all != 0 {
		t.Fatalf("%d bytes held after a call outside a reconcile", all)
	}
}
