package manifest

import (
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/cmd/metascript/internal/phrase"
	"metascript.dev/metascript/engine/hooks"
)

// Object is one resource object read from a file, of any kind, and where its document starts.
type Object struct {
	File   string
	Line   int
	Object map[string]any
}

// Where is the object's position for messages: FILE:LINE.
func (o Object) Where() string { return fmt.Sprintf("%s:%d", o.File, o.Line) }

// ReadObjects reads every resource object of the file at path, in order: each document, and
// each item of a `kind: List`. An object without apiVersion, kind or metadata.name, or a
// document that is not an object, is an error (*DocError, joined), as is an unreadable file.
func ReadObjects(path string) ([]Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Object
	var errs []error
	for _, d := range splitDocuments(data) {
		j, err := yaml.YAMLToJSON(d.text)
		var v any
		if err == nil {
			v, err = hooks.DecodeJSON(j)
		}
		if err != nil {
			errs = append(errs, &DocError{File: path, Line: d.line, Err: err})
			continue
		}
		if v == nil {
			continue // an empty document
		}
		items := []any{v}
		if obj, ok := v.(map[string]any); ok && obj["apiVersion"] == "v1" && obj["kind"] == "List" {
			items, _ = obj["items"].([]any)
		}
		for _, it := range items {
			obj, ok := it.(map[string]any)
			if !ok {
				errs = append(errs, &DocError{File: path, Line: d.line, Err: fmt.Errorf("expected a resource object, got %s", phrase.TypeOf(it))})
				continue
			}
			meta, _ := obj["metadata"].(map[string]any)
			name, _ := meta["name"].(string)
			apiVersion, _ := obj["apiVersion"].(string)
			kind, _ := obj["kind"].(string)
			if apiVersion == "" || kind == "" || name == "" {
				errs = append(errs, &DocError{File: path, Line: d.line, Err: errors.New("a resource object needs apiVersion, kind and metadata.name")})
				continue
			}
			out = append(out, Object{File: path, Line: d.line, Object: obj})
		}
	}
	return out, errors.Join(errs...)
}
