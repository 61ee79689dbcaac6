package manifest

import (
	"errors"
	"fmt"
	"strings"
)

// Set is the controllers and ConfigMaps of several files.
type Set struct {
	Files       []*File
	Controllers []*Controller
	ConfigMaps  ConfigMaps
}

// NewSet gathers files; a ConfigMap in any of them can serve a controller in any other.
func NewSet(files ...*File) *Set {
	s := &Set{Files: files, ConfigMaps: ConfigMaps{}}
	for _, f := range files {
		s.Controllers = append(s.Controllers, f.Controllers...)
		for k, v := range f.ConfigMaps {
			s.ConfigMaps[k] = v
		}
	}
	return s
}

// Find returns the controller called name, or the only controller when name is empty.
func (s *Set) Find(name string) (*Controller, error) {
	var names []string
	for _, c := range s.Controllers {
		if c.Name == name {
			return c, nil
		}
		names = append(names, c.Name)
	}
	switch {
	case len(s.Controllers) == 0:
		return nil, errors.New("no CompositeController found")
	case name == "" && len(s.Controllers) == 1:
		return s.Controllers[0], nil
	case name == "":
		return nil, fmt.Errorf("several controllers (%s): name one", strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("no CompositeController named %q (found: %s)", name, strings.Join(names, ", "))
}
