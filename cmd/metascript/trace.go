package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"metascript.dev/metascript/engine/trace"
)

// defaultDebugAddr is where `metascript run` serves its debug endpoint and `metascript trace`
// looks for it: loopback, since hook answers may hold what the cluster keeps secret.
const defaultDebugAddr = "127.0.0.1:9092"

var traceUsage = `Usage: metascript trace [--addr HOST:PORT] [--controller NAME] [--parent NAMESPACE/NAME] [--limit N] [-o text|json]

Prints the recent reconciles of a running engine, oldest first, as its debug endpoint
(` + trace.Path + ` on 'metascript run --debug-addr', loopback by default) keeps them: for each,
the controller and the parent, what triggered it (parent, child, input, related object,
resync, retry, resyncAfterSeconds, ...), how long it took and its error; each hook call with
its duration and its answer (or error); each write with its result. The engine keeps each
controller's last ` + strconv.Itoa(trace.PerController) + ` reconciles and its last ` + strconv.Itoa(trace.Total) + ` in all. Reach an engine in a cluster with
'kubectl port-forward deploy/metascript 9092'.

NAME is a controller as metrics name it: compositecontroller/NAME, decoratorcontroller/NAME,
mapcontroller/NAME, or KIND/NAMESPACE/NAME for the namespaced kinds.

Exit status: 0 printed; 1 the engine could not be reached or answered an error; 2 bad flags.

Flags:
`

// traceCommand is `metascript trace`.
func traceCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("trace", traceUsage, stderr)
	addr := fs.String("addr", defaultDebugAddr, "the engine's --debug-addr")
	controller := fs.String("controller", "", "only this controller's reconciles")
	parent := fs.String("parent", "", "only this parent's reconciles (namespace/name, or name)")
	limit := fs.Int("limit", 20, "the last N reconciles; 0 for all the engine keeps")
	output := fs.String("o", "text", "text or json")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagExit(err)
	}
	switch {
	case len(pos) > 0:
		return usageError(fs, "unexpected argument %q", pos[0])
	case *output != "text" && *output != "json":
		return usageError(fs, "-o %q: want text or json", *output)
	case *limit < 0:
		return usageError(fs, "--limit %d: want 0 or more", *limit)
	}
	q := url.Values{}
	for k, v := range map[string]string{"controller": *controller, "parent": *parent, "limit": strconv.Itoa(*limit)} {
		if v != "" {
			q.Set(k, v)
		}
	}
	u := "http://" + *addr + trace.Path + "?" + q.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "metascript trace: %v (is 'metascript run' serving --debug-addr %s?)\n", err, *addr)
		return exitFailed
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "metascript trace: %s: %s %s\n", u, resp.Status, strings.TrimSpace(string(body)))
		return exitFailed
	}
	if *output == "json" {
		_, _ = stdout.Write(body)
		return exitOK
	}
	var recs []trace.Reconcile
	if err := json.Unmarshal(body, &recs); err != nil {
		fmt.Fprintf(stderr, "metascript trace: %s: not a trace: %v\n", u, err)
		return exitFailed
	}
	writeTrace(stdout, recs)
	return exitOK
}

// writeTrace prints records as text: a line per reconcile, then one per call and write.
func writeTrace(w io.Writer, recs []trace.Reconcile) {
	if len(recs) == 0 {
		fmt.Fprintln(w, "no reconciles recorded")
		return
	}
	for _, r := range recs {
		outcome := "ok"
		if r.Error != "" {
			outcome = "error: " + r.Error
		}
		trigger := r.Trigger
		if trigger == "" {
			trigger = "-"
		}
		fmt.Fprintf(w, "%s %s %s (trigger: %s) %s: %s\n", r.Start.Format(time.RFC3339Nano), r.Controller, r.Parent,
			trigger, r.Duration.Round(time.Microsecond), outcome)
		for _, c := range r.Calls {
			what := c.Hook
			if c.About != "" {
				what += " for " + c.About
			}
			fmt.Fprintf(w, "  call %s (%s) %s%s: ", what, c.Form, c.Duration.Round(time.Microsecond), budgetUse(c.Used))
			switch {
			case c.Error != "":
				fmt.Fprintf(w, "error: %s\n", c.Error)
			case c.Cut:
				fmt.Fprintf(w, "answered (cut at %d bytes) %s\n", trace.MaxAnswer, brief(string(c.Answer)))
			default:
				fmt.Fprintf(w, "answered %s\n", brief(string(c.Answer)))
			}
		}
		for _, wr := range r.Writes {
			result := "ok"
			if wr.Error != "" {
				result = "error: " + wr.Error
			}
			fmt.Fprintf(w, "  write %s %s: %s\n", wr.Operation, wr.Object, result)
		}
	}
}

// budgetUse says what a call used of its budget: " of 5s, 1234 of 1000000 steps".
func budgetUse(u trace.Used) string {
	var b strings.Builder
	if u.Timeout > 0 {
		b.WriteString(" of " + u.Timeout.String())
	}
	if u.MaxSteps > 0 {
		fmt.Fprintf(&b, ", %d of %d steps", u.Steps, u.MaxSteps)
	}
	return b.String()
}

// brief is s, cut to a line's width.
func brief(s string) string {
	const width = 160
	if len(s) <= width {
		return s
	}
	return s[:width] + "..."
}
