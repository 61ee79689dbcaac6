package hooks

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Bounds of the delay a Retry-After header may ask for.
const (
	minRetryAfter = time.Second
	maxRetryAfter = time.Hour
)

// RetryAfterError reports a webhook that answered 429 Too Many Requests or 503 Service
// Unavailable with a Retry-After header: the hook is to be called again after After (the
// header's delay, kept between one second and one hour), which is not a failure of the hook.
// Find it with errors.As.
type RetryAfterError struct {
	After time.Duration
	Err   *WebhookError
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("%s (Retry-After: calling again in %s)", e.Err, e.After)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// parseRetryAfter reads a Retry-After value, delay-seconds or an HTTP-date, as a delay from
// now, bounded by minRetryAfter and maxRetryAfter. ok is false when v is neither.
func parseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil {
		d = maxRetryAfter
		if secs < uint64(maxRetryAfter/time.Second) {
			d = time.Duration(secs) * time.Second
		}
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	} else {
		return 0, false
	}
	return min(max(d, minRetryAfter), maxRetryAfter), true
}
