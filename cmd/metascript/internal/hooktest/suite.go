// Package hooktest reads the hook test files of `metascript hook test` and checks hook
// results against their cases. Running the hooks is the command's business.
//
// A test file is YAML (or JSON):
//
//	controller: ../controllers/bundle.yaml   # required; relative to this file
//	controllerName: bundle                  # when that file holds several controllers; KIND/NAME
//	                                        # when controllers of two kinds share the name
//	hook: sync                              # default hook of the cases; default: the
//	                                        # controller's primary hook (sync, or map)
//	now: "2025-01-02T03:04:05Z"             # the clock hooks read (stdlib time); default: real time
//	cases:
//	- name: two items make two ConfigMaps   # default "case N"
//	  hook: finalize                        # this case's hook, overriding the file's
//	  request:                              # the hook request, inline ...
//	    parent: {...}
//	  requestFile: requests/two.yaml        # ... or from a file relative to this one
//	  response: {...}                       # the whole response, compared as the engine
//	                                        # compares JSON values
//	  responseFile: responses/two.json      # ... or from a file
//	  assert:                               # checks of single values (see Assertion)
//	  - {path: children, length: 2}
//	  - {path: children[0].metadata.name, equals: b-one}
//	  - {path: status.ready, exists: true}
//	- name: a parent without items is refused
//	  request: {...}
//	  error: "spec.items is required"       # the hook must fail with this in its message
//
// Exactly one of request and requestFile is required. A case expecting `error` sets neither
// response nor assert. A case may set response, assert, both (all must hold) or neither (the
// hook must only succeed). As the engine does, a request without a controller field gets the
// controller resource as written. Unknown fields are errors, so a misspelt check never passes
// silently.
package hooktest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/cmd/metascript/internal/manifest"
	"metascript.dev/metascript/cmd/metascript/internal/phrase"
	"metascript.dev/metascript/engine/hooks"
)

// Suite is one test file.
type Suite struct {
	Controller     string `json:"controller"`
	ControllerName string `json:"controllerName,omitempty"`
	// Hook is the hook every case calls unless it names one; by default the controller's
	// primary hook (sync, or map for a MapController).
	Hook  string `json:"hook,omitempty"`
	Now   string `json:"now,omitempty"`
	Cases []Case `json:"cases"`

	// File is the test file's path; relative paths inside it are resolved against its
	// directory.
	File string `json:"-"`
	// NowTime is Now parsed; zero when unset.
	NowTime time.Time `json:"-"`
}

// Case is one test case.
type Case struct {
	Name         string          `json:"name,omitempty"`
	Hook         string          `json:"hook,omitempty"`
	Request      json.RawMessage `json:"request,omitempty"`
	RequestFile  string          `json:"requestFile,omitempty"`
	Response     json.RawMessage `json:"response,omitempty"`
	ResponseFile string          `json:"responseFile,omitempty"`
	Assert       []Assertion     `json:"assert,omitempty"`
	Error        *string         `json:"error,omitempty"`

	request  map[string]any
	response any
}

// Load reads and checks a test file, including the request and response files its cases
// name. Its errors name the case at fault, if one is, but not the test file. A Suite is
// returned with an error once the file was decoded, so that its cases can be counted.
func Load(path string) (*Suite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := &Suite{}
	if err := manifest.DecodeStrict(data, s); err != nil {
		return nil, err
	}
	s.File = path
	if err := s.check(); err != nil {
		return s, err
	}
	return s, nil
}

func (s *Suite) check() error {
	if s.Controller == "" {
		return errors.New("controller (the path of the controller file) is required")
	}
	if s.Now != "" {
		t, err := time.Parse(time.RFC3339Nano, s.Now)
		if err != nil {
			return fmt.Errorf("now: %v", err)
		}
		s.NowTime = t
	}
	if len(s.Cases) == 0 {
		return errors.New("no cases")
	}
	for i := range s.Cases {
		c := &s.Cases[i]
		if c.Name == "" {
			c.Name = fmt.Sprintf("case %d", i+1)
		}
		if c.Hook == "" {
			c.Hook = s.Hook
		}
		if err := c.load(filepath.Dir(s.File)); err != nil {
			return fmt.Errorf("cases[%d] (%s): %v", i, c.Name, err)
		}
	}
	return nil
}

// ControllerPath is the controller file's path, resolved against the test file.
func (s *Suite) ControllerPath() string { return resolvePath(filepath.Dir(s.File), s.Controller) }

func resolvePath(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

func (c *Case) load(dir string) error {
	req, err := value("request", c.Request, c.RequestFile, dir)
	if err != nil {
		return err
	}
	if req == nil {
		return errors.New("request or requestFile is required")
	}
	var ok bool
	if c.request, ok = req.(map[string]any); !ok {
		return fmt.Errorf("request: expected an object, got %s", phrase.TypeOf(req))
	}
	if c.response, err = value("response", c.Response, c.ResponseFile, dir); err != nil {
		return err
	}
	if c.Error != nil && (c.response != nil || len(c.Assert) > 0) {
		return errors.New("error excludes response and assert: a failing hook has no response")
	}
	for i := range c.Assert {
		if err := c.Assert[i].compile(); err != nil {
			return fmt.Errorf("assert[%d]: %v", i, err)
		}
	}
	return nil
}

// value decodes an inline value or the file that holds it; nil when neither is set.
func value(field string, inline json.RawMessage, file, dir string) (any, error) {
	switch {
	case inline != nil && file != "":
		return nil, fmt.Errorf("%s and %sFile are mutually exclusive", field, field)
	case inline != nil:
		v, err := hooks.DecodeJSON(inline)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", field, err)
		}
		return v, nil
	case file != "":
		v, err := ReadValue(resolvePath(dir, file))
		if err != nil {
			return nil, fmt.Errorf("%sFile: %v", field, err)
		}
		return v, nil
	}
	return nil, nil
}

// ReadValue reads a YAML or JSON file holding one value, in the engine's value shape
// (int64 for integral numbers).
func ReadValue(path string) (any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeValue(data)
}

// DecodeValue decodes YAML or JSON data holding one value.
func DecodeValue(data []byte) (any, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	return hooks.DecodeJSON(j)
}

// NewRequest returns a fresh copy of the case's request, so that a run cannot alter the case.
func (c *Case) NewRequest() map[string]any {
	return runtime.DeepCopyJSON(c.request)
}

// Check returns why the case failed given the hook's response or error; none when it passed.
func (c *Case) Check(resp map[string]any, hookErr error) []string {
	if c.Error != nil {
		switch {
		case hookErr == nil:
			return []string{fmt.Sprintf("want a hook error containing %q, the hook returned %s", *c.Error, Render(resp))}
		case !strings.Contains(hookErr.Error(), *c.Error):
			return []string{fmt.Sprintf("want a hook error containing %q, got: %v", *c.Error, hookErr)}
		}
		return nil
	}
	if hookErr != nil {
		return []string{"hook failed: " + hookErr.Error()}
	}
	var fails []string
	if c.response != nil {
		fails = append(fails, Diff(c.response, any(resp))...)
	}
	for i := range c.Assert {
		if err := c.Assert[i].Check(any(resp)); err != nil {
			fails = append(fails, err.Error())
		}
	}
	return fails
}
