package hooks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"metascript.dev/metascript/apis/v1alpha1"
)

// etagServer answers 200 with ETag "v1" and a status counting its 200s, or notModified when
// the request's If-None-Match is "v1". sent returns the If-None-Match values it was sent.
func etagServer(t *testing.T, notModified int) (srv *httptest.Server, sent func() []string) {
	var mu sync.Mutex
	var full int
	var got []string
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Header.Get("If-None-Match"))
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(notModified)
			return
		}
		full++
		w.Header().Set("ETag", `"v1"`)
		fmt.Fprintf(w, `{"status":{"full":%d}}`, full)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

func TestWebhookETagReusesResponse(t *testing.T) {
	for _, status := range []int{http.StatusNotModified, http.StatusPreconditionFailed} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			srv, sent := etagServer(t, status)
			w := buildWebhookHook(t, &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &srv.URL,
				Etag: &v1alpha1.WebhookEtag{Enabled: ptr(true)}}}, nil)
			req := map[string]any{"parent": "p"}
			for i := range 3 {
				resp, err := w.Invoke(context.Background(), req, nil)
				if err != nil {
					t.Fatal(err)
				}
				if got := resp["status"].(map[string]any)["full"]; got != int64(1) {
					t.Fatalf("call %d: status.full = %v, want the first response (1) reused", i, got)
				}
			}
			if want := []string{"", `"v1"`, `"v1"`}; strings.Join(sent(), ",") != strings.Join(want, ",") {
				t.Fatalf("If-None-Match sent %q, want %q", sent(), want)
			}
			// Another request has no cached response: no If-None-Match.
			if _, err := w.Invoke(context.Background(), map[string]any{"parent": "q"}, nil); err != nil {
				t.Fatal(err)
			}
			if last := sent()[len(sent())-1]; last != "" {
				t.Fatalf("a new request sent If-None-Match %q", last)
			}
		})
	}
}

func TestWebhookETagExpiry(t *testing.T) {
	srv, sent := etagServer(t, http.StatusNotModified)
	w := buildWebhookHook(t, &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &srv.URL,
		Etag: &v1alpha1.WebhookEtag{Enabled: ptr(true), CacheTimeoutSeconds: ptr(int32(30)), CacheCleanupSeconds: ptr(int32(10))}}}, nil)
	now := time.Unix(1000, 0)
	w.ETags.now = func() time.Time { return now }
	call := func(req string) map[string]any {
		t.Helper()
		resp, err := w.Invoke(context.Background(), map[string]any{"parent": req}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	call("p")
	now = now.Add(29 * time.Second)
	call("p")
	if sent()[1] != `"v1"` {
		t.Fatalf("within cacheTimeoutSeconds the cached ETag was not sent: %q", sent())
	}
	now = now.Add(2 * time.Second) // 31s after it was stored
	if got := call("p")["status"].(map[string]any)["full"]; got != int64(2) || sent()[2] != "" {
		t.Fatalf("expired entry still used: status.full %v, If-None-Match %q", got, sent()[2])
	}
	call("q")
	if n := w.ETags.Len(); n != 2 {
		t.Fatalf("%d entries, want 2 (p stored again, q)", n)
	}
	now = now.Add(31 * time.Second) // both expired; the last sweep was more than 10s ago
	if _, ok := w.ETags.get([32]byte{}); ok || w.ETags.Len() != 0 {
		t.Fatalf("%d entries after a sweep with every entry expired", w.ETags.Len())
	}
}

func TestWebhookNotModifiedWithoutETag(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotModified)
	}))
	defer srv.Close()
	w := buildWebhookHook(t, &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &srv.URL}}, nil)
	_, err := w.Invoke(context.Background(), map[string]any{}, nil)
	var we *WebhookError
	if !errors.As(err, &we) || we.Status != http.StatusNotModified || !strings.Contains(err.Error(), "no cached response") {
		t.Fatalf("error %v, want a WebhookError saying there is no cached response", err)
	}
}

func TestWebhookResponseUnMarshallMode(t *testing.T) {
	const (
		unknownField = `{"status":{"a":1},"extra":true}`
		nestedDup    = `{"status":{"a":1,"a":2}}`
		topDup       = `{"children":[],"status":{},"children":[]}`
	)
	loose, strict := v1alpha1.ResponseUnMarshallModeLoose, v1alpha1.ResponseUnMarshallModeStrict
	for _, tc := range []struct {
		name    string
		mode    *v1alpha1.ResponseUnMarshallMode
		version v1alpha1.HookVersion
		body    string
		want    string // the response as JSON
		wantErr string
	}{
		{name: "loose drops an unknown field", mode: &loose, body: unknownField, want: `{"status":{"a":1}}`},
		{name: "strict refuses an unknown field", mode: &strict, body: unknownField,
			wantErr: `unknown field "extra" in the sync hook's response (allowed: status, children, resyncAfterSeconds, finalized)`},
		{name: "loose keeps a duplicated key's last value", mode: &loose, body: nestedDup, want: `{"status":{"a":2}}`},
		{name: "strict refuses a nested duplicated key", mode: &strict, body: nestedDup, wantErr: `duplicate key "status.a"`},
		{name: "strict refuses a top-level duplicated key", mode: &strict, body: topDup, wantErr: `duplicate key "children"`},
		{name: "strict refuses a duplicated key in a list", mode: &strict, body: `{"children":[{"kind":"A","kind":"B"}]}`,
			wantErr: `duplicate key "children[0].kind"`},
		{name: "v1 defaults to loose", version: v1alpha1.HookVersionV1, body: unknownField, want: `{"status":{"a":1}}`},
		{name: "unset version defaults to loose", body: nestedDup, want: `{"status":{"a":2}}`},
		{name: "v2 defaults to strict", version: v1alpha1.HookVersionV2, body: unknownField, wantErr: `unknown field "extra"`},
		{name: "v2 may ask for loose", version: v1alpha1.HookVersionV2, mode: &loose, body: unknownField, want: `{"status":{"a":1}}`},
		{name: "strict accepts a clean response", mode: &strict, body: `{"status":{"a":[1,2.5,"x",null,true]},"finalized":false}`,
			want: `{"finalized":false,"status":{"a":[1,2.5,"x",null,true]}}`},
		{name: "strict refuses trailing data", mode: &strict, body: `{} {}`, wantErr: "data after the top-level value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, tc.body) }))
			defer srv.Close()
			w := buildWebhookHook(t, &v1alpha1.Hook{Version: tc.version,
				Webhook: &v1alpha1.Webhook{URL: &srv.URL, ResponseUnMarshallMode: tc.mode}}, nil)
			resp, err := w.Invoke(context.Background(), map[string]any{}, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				var re *ResponseError
				if strings.Contains(tc.wantErr, "duplicate") || strings.Contains(tc.wantErr, "unknown") {
					if !errors.As(err, &re) {
						t.Fatalf("error %T, want a *ResponseError (an invalid response)", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := mustJSON(resp); got != tc.want {
				t.Fatalf("response %s, want %s", got, tc.want)
			}
		})
	}
}

func TestWebhookRetryAfter(t *testing.T) {
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		name          string
		status        int
		header        string
		min, max      time.Duration // the RetryAfterError's After; both 0: no RetryAfterError
		wantInMessage string
	}{
		{name: "429 with seconds", status: 429, header: "7", min: 7 * time.Second, max: 7 * time.Second, wantInMessage: "HTTP 429"},
		{name: "503 with an HTTP date", status: 503, header: date, min: 88 * time.Second, max: 90 * time.Second, wantInMessage: "HTTP 503"},
		{name: "429 without Retry-After", status: 429, wantInMessage: "HTTP 429"},
		{name: "500 with Retry-After", status: 500, header: "7", wantInMessage: "HTTP 500"},
		{name: "429 with garbage", status: 429, header: "soon", wantInMessage: "HTTP 429"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				http.Error(w, "busy", tc.status)
			}))
			defer srv.Close()
			w := buildWebhookHook(t, &v1alpha1.Hook{Webhook: &v1alpha1.Webhook{URL: &srv.URL}}, nil)
			_, err := w.Invoke(context.Background(), map[string]any{}, nil)
			var ra *RetryAfterError
			var we *WebhookError
			if !errors.As(err, &we) || we.Status != tc.status || !strings.Contains(err.Error(), tc.wantInMessage) {
				t.Fatalf("error %v, want a WebhookError of status %d", err, tc.status)
			}
			if got := errors.As(fmt.Errorf("sync hook: %w", err), &ra); got != (tc.max > 0) {
				t.Fatalf("RetryAfterError found = %v, want %v (error %v)", got, tc.max > 0, err)
			}
			if ra != nil && (ra.After < tc.min || ra.After > tc.max) {
				t.Fatalf("After = %s, want between %s and %s", ra.After, tc.min, tc.max)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 2 * time.Minute, true},
		{" 5 ", 5 * time.Second, true},
		{"0", time.Second, true},         // at least a second
		{"99999999999", time.Hour, true}, // at most an hour
		{"Fri, 02 Jan 2026 03:05:05 GMT", time.Minute, true},
		{"Fri, 02 Jan 2026 03:00:00 GMT", time.Second, true}, // in the past
		{"-1", 0, false},
		{"", 0, false},
		{"tomorrow", 0, false},
	} {
		got, ok := parseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseRetryAfter(%q) = %s, %v; want %s, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
