package main

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/leader"
	"metascript.dev/metascript/engine/shard"
)

// check is one named health check; nil error is healthy.
type check struct {
	name string
	run  func(*http.Request) error
}

// checks answers a probe as kube-apiserver's /healthz and /readyz do: 200 "ok" when every
// check passes, else 500 listing each ("[+]name ok", "[-]name failed: why"); the query
// `exclude=NAME` (repeatable) skips a check, `verbose` lists them on success too.
type checks []check

func (cs checks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	excluded := q["exclude"]
	var out strings.Builder
	failed := false
	for _, c := range cs {
		if slices.Contains(excluded, c.name) {
			fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.name)
			continue
		}
		if err := c.run(r); err != nil {
			failed = true
			fmt.Fprintf(&out, "[-]%s failed: %v\n", c.name, err)
			continue
		}
		fmt.Fprintf(&out, "[+]%s ok\n", c.name)
	}
	switch {
	case failed:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, out.String(), "check failed\n")
	case q.Has("verbose"):
		fmt.Fprint(w, out.String(), "ok\n")
	default:
		fmt.Fprintln(w, "ok")
	}
}

// health are the engine's liveness and readiness checks.
type health struct{ live, ready checks }

// healthChecks returns the probes of an engine run with leader election (elector), as a
// ring member (member), or alone (both nil).
//   - /healthz: "leader-election" or "ring-member" fails once the Lease's renewals stopped,
//     so that a wedged process is restarted.
//   - /readyz: "leader" passes on the leader only (readiness reflects leadership; a standby's
//     probe may exclude it: /readyz?exclude=leader), "ring-member" once the member
//     reconciles its share, and "controllers" once every controller resource was acted on.
func healthChecks(eng *engine.Engine, elector *leader.Elector, member *shard.Member) health {
	var h health
	switch {
	case elector != nil:
		h.live = append(h.live, check{"leader-election", elector.Healthy})
		h.ready = append(h.ready, check{"leader", func(*http.Request) error {
			if !elector.Leading() {
				return errors.New("standing by: another engine holds the Lease")
			}
			return nil
		}})
	case member != nil:
		h.live = append(h.live, check{"ring-member", member.Healthy})
		h.ready = append(h.ready, check{"ring-member", func(*http.Request) error {
			if !member.Joined() {
				return errors.New("not reconciling a share yet: joining, or waiting for every member to acknowledge a change of the ring")
			}
			return nil
		}})
	}
	h.live = append(h.live, check{"ping", func(*http.Request) error { return nil }})
	h.ready = append(h.ready, check{"controllers", func(*http.Request) error {
		if !eng.Ready() {
			return errors.New("controllers not started yet")
		}
		return nil
	}})
	return h
}
