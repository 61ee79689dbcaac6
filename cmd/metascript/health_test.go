package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestChecks(t *testing.T) {
	cs := checks{
		{"leader", func(*http.Request) error { return errors.New("standing by") }},
		{"controllers", func(*http.Request) error { return nil }},
	}
	for _, tc := range []struct {
		query string
		code  int
		body  string
	}{
		{"", 500, "[-]leader failed: standing by\n[+]controllers ok\ncheck failed\n"},
		{"?exclude=leader", 200, "ok\n"},
		{"?exclude=leader&verbose", 200, "[+]leader excluded: ok\n[+]controllers ok\nok\n"},
		{"?exclude=controllers", 500, "[-]leader failed: standing by\n[+]controllers excluded: ok\ncheck failed\n"},
	} {
		w := httptest.NewRecorder()
		cs.ServeHTTP(w, httptest.NewRequest("GET", "/readyz"+tc.query, nil))
		if w.Code != tc.code || w.Body.String() != tc.body {
			t.Errorf("/readyz%s = %d %q, want %d %q", tc.query, w.Code, w.Body.String(), tc.code, tc.body)
		}
	}
}
