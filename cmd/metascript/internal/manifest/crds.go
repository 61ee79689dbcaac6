package manifest

import (
	"encoding/json"
)

// CRD is what the offline commands read of a CustomResourceDefinition: the resource it
// serves, so that they know its kind and scope without an API server.
type CRD struct {
	Group    string `json:"group"`
	Scope    string `json:"scope"` // Namespaced or Cluster
	Names    struct{ Kind, Plural string }
	Versions []struct {
		Name string `json:"name"`
	} `json:"versions"`
}

// crdOf reads the spec of a CustomResourceDefinition; fields other than those of CRD are
// ignored. A definition that does not name a resource is no error, since checking it is the
// API server's business: it is left out (false).
func crdOf(obj map[string]any) (CRD, bool) {
	var c CRD
	data, err := json.Marshal(obj["spec"])
	if err == nil {
		err = json.Unmarshal(data, &c)
	}
	return c, err == nil && c.Group != "" && c.Names.Kind != "" && c.Names.Plural != "" && len(c.Versions) > 0
}
