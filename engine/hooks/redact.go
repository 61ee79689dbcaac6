package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// A tenant's webhook may point at a service the tenant could not read otherwise: what its
// errors say of an answer is the status code, its reason phrase and where decoding stopped,
// never anything of the body, which would reach the tenant in a HookFailed Event.

// bodyHidden closes every error that leaves the body out, so the tenant knows where to look.
const bodyHidden = "the body is not shown for a tenant's webhook: see the webhook's own logs"

// tenantStatusReason is what a tenant's webhook error says of a non-200 answer.
func tenantStatusReason(code int) string {
	phrase := http.StatusText(code)
	if phrase == "" {
		phrase = "unknown status"
	}
	if code >= 300 && code < 400 {
		return phrase + " (a tenant's webhook follows no redirect)"
	}
	return fmt.Sprintf("%s (%s)", phrase, bodyHidden)
}

// tenantDecodeReason is what a tenant's webhook error says of a 200 body of size bytes that
// did not decode (err): where, not what.
func tenantDecodeReason(err error, size int) string {
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("not JSON: syntax error at byte %d of %d (%s)", syntax.Offset, size, bodyHidden)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("not JSON: the body (%d bytes) ends before its value does (%s)", size, bodyHidden)
	}
	return fmt.Sprintf("the body (%d bytes) is not one JSON value (%s)", size, bodyHidden)
}
