package scale

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
)

// fanoutRequest is the part of a sync request the Fanout hook reads: the parent alone.
// Metacontroller's requests carry more (controller, children, related, finalizing).
type fanoutRequest struct {
	Parent struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			Children int `json:"children"`
		} `json:"spec"`
	} `json:"parent"`
}

type fanoutResponse struct {
	Status   fanoutStatus  `json:"status"`
	Children []fanoutChild `json:"children"`
}

type fanoutStatus struct {
	Children int `json:"children"`
}

type fanoutChild struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   fanoutChildMeta   `json:"metadata"`
	Data       map[string]string `json:"data"`
}

type fanoutChildMeta struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

// fanoutSync is the sync hook of testdata/controller.yaml written in Go: spec.children
// ConfigMaps named <parent>-<i>, labelled with the parent's selector, and the status
// {"children": n}. TestFanoutSyncMatchesHook holds the two to the same answer.
func fanoutSync(req fanoutRequest) fanoutResponse {
	p := req.Parent
	out := fanoutResponse{Children: make([]fanoutChild, 0, p.Spec.Children)}
	for i := range p.Spec.Children {
		out.Children = append(out.Children, fanoutChild{
			APIVersion: "v1",
			Kind:       "ConfigMap",
			Metadata:   fanoutChildMeta{Name: fmt.Sprintf("%s-%d", p.Metadata.Name, i), Labels: p.Spec.Selector.MatchLabels},
			Data:       map[string]string{"parent": p.Metadata.Name, "index": fmt.Sprint(i)},
		})
	}
	out.Status.Children = len(out.Children)
	return out
}

// hookServer serves fanoutSync as a sync webhook (JSON in, JSON out) on loopback and counts
// its calls.
type hookServer struct {
	*httptest.Server
	calls atomic.Int64
}

func startHookServer() *hookServer {
	h := &hookServer{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.calls.Add(1)
		var req fanoutRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "decoding the sync request: "+err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(fanoutSync(req))
	}))
	return h
}
