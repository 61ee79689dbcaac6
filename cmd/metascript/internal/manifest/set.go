package manifest

import (
	"fmt"
	"strings"
)

// Set is the controllers, ConfigMaps, Secrets, CustomResourceDefinitions and hook libraries
// of several files.
type Set struct {
	Files       []*File
	Controllers []*Controller
	ConfigMaps  ConfigMaps
	Secrets     Secrets
	CRDs        []CRD
	Libraries   []Library
}

// NewSet gathers files; a ConfigMap or Secret in any of them can serve a controller in any
// other.
func NewSet(files ...*File) *Set {
	s := &Set{Files: files, ConfigMaps: ConfigMaps{}, Secrets: Secrets{}}
	for _, f := range files {
		s.Controllers = append(s.Controllers, f.Controllers...)
		for k, v := range f.ConfigMaps {
			s.ConfigMaps[k] = v
		}
		for k, v := range f.Secrets {
			s.Secrets[k] = v
		}
		s.CRDs = append(s.CRDs, f.CRDs...)
		s.Libraries = append(s.Libraries, f.Libraries...)
	}
	return s
}

// Find returns the controller called name, or the only controller when name is empty. A
// controller is named by NAME, or by its Ref (KIND/NAME) where controllers of two kinds share
// NAME; names in errors are given the same way.
func (s *Set) Find(name string) (*Controller, error) {
	var found []*Controller
	for _, c := range s.Controllers {
		if c.Name == name || c.Ref() == name {
			found = append(found, c)
		}
	}
	for _, c := range found {
		if c.Ref() != found[0].Ref() {
			return nil, fmt.Errorf("several controllers named %q (%s): name one as KIND/NAME",
				name, strings.Join(refs(found), ", "))
		}
	}
	switch {
	case len(found) > 0:
		return found[0], nil
	case len(s.Controllers) == 0:
		return nil, fmt.Errorf("no controller resource (%s) found", strings.Join(Kinds, ", "))
	case name == "" && len(s.Controllers) == 1:
		return s.Controllers[0], nil
	case name == "":
		return nil, fmt.Errorf("several controllers (%s): name one", strings.Join(s.names(), ", "))
	}
	return nil, fmt.Errorf("no controller named %q (found: %s)", name, strings.Join(s.names(), ", "))
}

// names lists the controllers as Find takes them: NAME, or KIND/NAME where a controller of
// another kind has the same name.
func (s *Set) names() []string {
	kindOf := map[string]string{}
	shared := map[string]bool{}
	for _, c := range s.Controllers {
		if k, ok := kindOf[c.Name]; ok && k != c.Kind {
			shared[c.Name] = true
		}
		kindOf[c.Name] = c.Kind
	}
	var out []string
	for _, c := range s.Controllers {
		if shared[c.Name] {
			out = append(out, c.Ref())
		} else {
			out = append(out, c.Name)
		}
	}
	return out
}

func refs(cs []*Controller) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Ref()
	}
	return out
}
