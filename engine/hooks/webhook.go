package hooks

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"metascript.dev/metascript/engine/fairshare"
)

// DefaultMaxAnswer bounds a webhook's response body when Webhook.MaxResponse is not set.
const DefaultMaxAnswer = 16 << 20

// statusBodyBytes is how much of a refusal's body is read: only its start is ever shown.
const statusBodyBytes = 4096

// WebhookError reports a failed webhook call: transport error, timeout, non-200 status or
// undecodable body.
type WebhookError struct {
	URL    string
	Status int
	Msg    string
}

func (e *WebhookError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("webhook %s: HTTP %d: %s", e.URL, e.Status, e.Msg)
	}
	return fmt.Sprintf("webhook %s: %s", e.URL, e.Msg)
}

// Webhook POSTs the request as JSON and decodes the JSON response. Only URL, Timeout and
// Client are required; the zero values of the other fields send no extra header, cache
// nothing and decode loosely without checking field names.
type Webhook struct {
	URL     string
	Timeout time.Duration
	Client  *http.Client
	// Header is sent with every request: the Authorization header, when configured.
	Header http.Header
	// Response says how the response is decoded.
	Response ResponseRules
	// ETags, when set, keeps responses that carry an ETag and asks the hook with
	// If-None-Match whether the kept response still holds.
	ETags *ETagCache
	// Tenant says the webhook is a tenant controller's (Spec.Tenant): its errors carry the
	// status code and a short reason only, never anything of the response body, which may
	// come from a service the tenant could not read otherwise; and a 3xx answer, which its
	// client does not follow, is a failure.
	Tenant bool
	// MaxResponse bounds the response body; a larger one is refused before it is read past
	// the bound. Zero: DefaultMaxAnswer.
	MaxResponse int64
	// Memory, when set, is the room the answers of every webhook share (the engine's
	// --answer-memory): a body is read only once room for it is taken for the flow of the
	// call's context, and that room is held until the reconcile that asked ends (the
	// context's fairshare.Holdings), or until Invoke returns without one.
	Memory *fairshare.Bytes
}

// ResponseRules are the loose or strict decoding of one hook's responses.
type ResponseRules struct {
	// Hook names the hook in errors and logs: sync, finalize, map, ...
	Hook string
	// Strict refuses a duplicated key anywhere and a top-level field not in Fields. Loose
	// keeps a duplicated key's last value and drops top-level fields not in Fields.
	Strict bool
	// Fields are the top-level fields the hook's response may hold; nil leaves field
	// names unchecked.
	Fields []string
}

// Form implements Invoker.
func (w *Webhook) Form() string { return "webhook" }

// Invoke implements Invoker. Integral JSON numbers decode to int64 and others to float64, the
// shape the engine's cache holds, so unchanged values compare equal. A 429 or 503 answer with
// a Retry-After header is a *RetryAfterError; other failures are *WebhookError, or
// *ResponseError for a response that breaks ResponseRules.
func (w *Webhook) Invoke(ctx context.Context, req map[string]any, log *slog.Logger) (map[string]any, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, &WebhookError{URL: w.URL, Msg: "encoding request: " + err.Error()}
	}
	var key [sha256.Size]byte
	var cached etagEntry
	var haveCached bool
	if w.ETags != nil {
		key = sha256.Sum256(body)
		cached, haveCached = w.ETags.get(key)
	}
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return nil, &WebhookError{URL: w.URL, Msg: err.Error()}
	}
	for k, v := range w.Header {
		hreq.Header[k] = v
	}
	hreq.Header.Set("Content-Type", "application/json")
	if haveCached {
		hreq.Header.Set("If-None-Match", cached.etag)
	}
	resp, err := w.Client.Do(hreq)
	if egress := (*EgressError)(nil); errors.As(err, &egress) {
		return nil, &WebhookError{URL: w.URL, Msg: egress.Error()}
	}
	if err != nil {
		return nil, &WebhookError{URL: w.URL, Msg: err.Error()}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case haveCached && (resp.StatusCode == http.StatusNotModified || resp.StatusCode == http.StatusPreconditionFailed):
		return w.decode(cached.body, resp.StatusCode, log)
	default:
		data, err := io.ReadAll(io.LimitReader(resp.Body, statusBodyBytes))
		if err != nil {
			return nil, &WebhookError{URL: w.URL, Status: resp.StatusCode, Msg: "reading response: " + err.Error()}
		}
		return nil, w.statusError(resp, data)
	}
	data, err := w.readAnswer(ctx, resp)
	if err != nil {
		return nil, err
	}
	out, err := w.decode(data, resp.StatusCode, log)
	if err != nil {
		return nil, err
	}
	if etag := resp.Header.Get("ETag"); w.ETags != nil && etag != "" {
		w.ETags.put(key, etag, data)
	}
	return out, nil
}

// statusError describes a refusal: a *RetryAfterError when the hook said when to call
// again, a *WebhookError with the start of the body otherwise, or, for a tenant's webhook,
// with the status's reason phrase instead of the body.
func (w *Webhook) statusError(resp *http.Response, body []byte) error {
	msg := truncate(string(body), 512)
	if w.Tenant {
		msg = tenantStatusReason(resp.StatusCode)
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		msg = "the endpoint refused the request's credentials (see the webhook's authorization, basicAuth, " +
			"clientTLS or the controller's endpointConfigs): " + msg
	case http.StatusNotModified, http.StatusPreconditionFailed:
		msg = "no cached response to reuse (etag is not enabled, or the cached response expired): " + msg
	}
	we := &WebhookError{URL: w.URL, Status: resp.StatusCode, Msg: msg}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		if after, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return &RetryAfterError{After: after, Err: we}
		}
	}
	return we
}

// decode applies the response rules to a 200 body (or the cached one a 304 or 412 reuses).
func (w *Webhook) decode(data []byte, status int, log *slog.Logger) (map[string]any, error) {
	var v any
	var err error
	if w.Response.Strict {
		v, err = decodeStrictJSON(data)
	} else {
		v, err = DecodeJSON(data)
	}
	var dup *duplicateKeyError
	if errors.As(err, &dup) && w.Tenant {
		return nil, &ResponseError{Msg: fmt.Sprintf("webhook %s: strict responseUnMarshallMode: a key appears twice in one object (%s)", w.URL, bodyHidden)}
	}
	if errors.As(err, &dup) {
		return nil, &ResponseError{Msg: fmt.Sprintf("webhook %s: strict responseUnMarshallMode: %s", w.URL, dup)}
	}
	if err != nil && w.Tenant {
		return nil, &WebhookError{URL: w.URL, Status: status, Msg: "decoding response: " + tenantDecodeReason(err, len(data))}
	}
	if err != nil {
		return nil, &WebhookError{URL: w.URL, Status: status, Msg: "decoding response: " + err.Error()}
	}
	obj, err := asObject(v)
	if err != nil {
		return nil, err
	}
	return obj, w.Response.checkFields(w.URL, obj, log, w.Tenant)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// readAnswer reads a 200 response's body, at most MaxResponse bytes, once the room it takes
// is held (Memory); the room is then held for the size read.
func (w *Webhook) readAnswer(ctx context.Context, resp *http.Response) ([]byte, error) {
	limit := w.MaxResponse
	if limit <= 0 {
		limit = DefaultMaxAnswer
	}
	tooLarge := func(size string) error {
		return &WebhookError{URL: w.URL, Status: resp.StatusCode, Msg: fmt.Sprintf(
			"the response is %s, larger than the engine takes of one answer (%s, --max-answer-bytes)", size, quantity(limit))}
	}
	if resp.ContentLength > limit {
		return nil, tooLarge(quantity(resp.ContentLength))
	}
	room := limit
	if resp.ContentLength >= 0 {
		room = max(resp.ContentLength, 1)
	}
	give, err := w.reserve(ctx, room)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	switch {
	case err != nil:
		give(room)
		return nil, &WebhookError{URL: w.URL, Status: resp.StatusCode, Msg: "reading response: " + err.Error()}
	case int64(len(data)) > limit:
		give(room)
		return nil, tooLarge("more than " + quantity(limit))
	}
	kept := min(int64(len(data)), room)
	give(room - kept)
	if h := fairshare.HoldingsOf(ctx); h != nil {
		h.Add(func() { give(kept) })
	} else {
		defer give(kept)
	}
	return data, nil
}

// reserve takes n bytes of Memory for the call's flow and returns how to give some back;
// without Memory it takes nothing.
func (w *Webhook) reserve(ctx context.Context, n int64) (give func(int64), err error) {
	if w.Memory == nil {
		return func(int64) {}, nil
	}
	f := fairshare.FlowOf(ctx)
	if err := w.Memory.Acquire(ctx, f, n); err != nil {
		return nil, &WebhookError{URL: w.URL, Msg: "waiting for room for the answer: " + err.Error()}
	}
	return func(m int64) {
		if m > 0 {
			w.Memory.Release(f, m)
		}
	}, nil
}

// quantity is n bytes as a Kubernetes quantity (16Mi).
func quantity(n int64) string { return resource.NewQuantity(n, resource.BinarySI).String() }
