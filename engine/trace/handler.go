package trace

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Path is where Handler is served on the engine's debug address.
const Path = "/debug/trace"

// Handler serves the records as a JSON array, oldest first, selected by the query parameters
// controller (compositecontroller/NAME, or namespace/NAME for namespaced kinds, as metrics
// name them), parent (namespace/name) and limit.
func (r *Recorder) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		q := Query{Controller: req.URL.Query().Get("controller"), Parent: req.URL.Query().Get("parent")}
		if l := req.URL.Query().Get("limit"); l != "" {
			n, err := strconv.Atoi(l)
			if err != nil || n < 0 {
				http.Error(w, "limit: expected a number of records, 0 or more", http.StatusBadRequest)
				return
			}
			q.Limit = n
		}
		recs := r.Records(q)
		if recs == nil {
			recs = []*Reconcile{}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(recs)
	})
}
