package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"metascript.dev/metascript/apis/v1alpha1"
)

// maxWebhookResponse bounds a webhook response body; a larger one is an error.
const maxWebhookResponse = 64 << 20

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

// Webhook POSTs the request as JSON and decodes the JSON response.
type Webhook struct {
	URL     string
	Timeout time.Duration
	Client  *http.Client
}

// NewWebhook resolves the address of a webhook spec: url as is, or a Service's cluster DNS name.
func NewWebhook(w *v1alpha1.Webhook, timeout time.Duration) (*Webhook, error) {
	url := ""
	switch {
	case w.URL != nil:
		url = *w.URL
	case w.Service != nil:
		proto, port := "http", int32(80)
		if w.Service.Protocol != nil {
			proto = *w.Service.Protocol
		}
		if w.Service.Port != nil {
			port = *w.Service.Port
		}
		url = fmt.Sprintf("%s://%s.%s:%d", proto, w.Service.Name, w.Service.Namespace, port)
		if w.Path != nil {
			url += *w.Path
		}
	default:
		return nil, fmt.Errorf("webhook: exactly one of url or service must be set")
	}
	return &Webhook{URL: url, Timeout: timeout, Client: http.DefaultClient}, nil
}

// Form implements Invoker.
func (w *Webhook) Form() string { return "webhook" }

// Invoke implements Invoker. Integral JSON numbers decode to int64 and others to float64, the
// shape the engine's cache holds, so unchanged values compare equal.
func (w *Webhook) Invoke(ctx context.Context, req map[string]any, _ *slog.Logger) (map[string]any, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, &WebhookError{URL: w.URL, Msg: "encoding request: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return nil, &WebhookError{URL: w.URL, Msg: err.Error()}
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := w.Client.Do(hreq)
	if err != nil {
		return nil, &WebhookError{URL: w.URL, Msg: err.Error()}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxWebhookResponse+1))
	if err != nil {
		return nil, &WebhookError{URL: w.URL, Status: resp.StatusCode, Msg: "reading response: " + err.Error()}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &WebhookError{URL: w.URL, Status: resp.StatusCode, Msg: truncate(string(data), 512)}
	}
	if len(data) > maxWebhookResponse {
		return nil, &WebhookError{URL: w.URL, Status: resp.StatusCode, Msg: "response larger than 64 MiB"}
	}
	v, err := DecodeJSON(data)
	if err != nil {
		return nil, &WebhookError{URL: w.URL, Status: resp.StatusCode, Msg: "decoding response: " + err.Error()}
	}
	return asObject(v)
}

// DecodeJSON decodes JSON into the engine's value shape: int64 for integral numbers that
// fit, float64 for the rest.
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return normalizeNumbers(v), nil
}

func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = normalizeNumbers(e)
		}
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	}
	return v
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
