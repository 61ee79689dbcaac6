// Package manifest reads controller resources of every kind engine/kinds lists (described
// alike by Controller), the ConfigMaps their hooks may take source from, the Secrets their
// webhooks may take credentials from, the HookLibraries and NamespacedHookLibraries their
// hooks may load and the CustomResourceDefinitions that name the kinds of their resources,
// out of YAML or JSON files the way the offline commands need them: several documents per
// file, `kind: List`, strict decoding that names a misspelt field instead of dropping it as
// the API server's pruning would. It knows nothing about running hooks.
package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/cmd/metascript/internal/phrase"
	"metascript.dev/metascript/engine/admission"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/kinds"
	"metascript.dev/metascript/engine/reconcile"
)

// DocError reports a document that could not be read as what it claims to be. The other
// documents of the file are still loaded.
type DocError struct {
	File string
	Line int
	// Ref is kind/name when the document got that far, else empty.
	Ref string
	Err error
}

func (e *DocError) Error() string {
	if e.Ref != "" {
		return fmt.Sprintf("%s:%d: %s: %v", e.File, e.Line, e.Ref, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *DocError) Unwrap() error { return e.Err }

// File is what one file holds. Documents of other kinds are ignored.
type File struct {
	Path        string
	Controllers []*Controller
	ConfigMaps  ConfigMaps
	Secrets     Secrets
	// CRDs are the CustomResourceDefinitions, which name the kinds of custom resources.
	CRDs []CRD
	// Libraries are the HookLibraries and NamespacedHookLibraries, in file order.
	Libraries []Library
	// Errors are the documents that could not be decoded, in file order.
	Errors []*DocError
}

// ReadFile reads path. Its error is about the file as a whole (unreadable); problems of single
// documents are in File.Errors.
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data), nil
}

// Parse reads the documents of data, naming them after path.
func Parse(path string, data []byte) *File {
	f := &File{Path: path, ConfigMaps: ConfigMaps{}, Secrets: Secrets{}}
	for _, d := range splitDocuments(data) {
		j, err := yaml.YAMLToJSON(d.text)
		if err != nil {
			f.Errors = append(f.Errors, &DocError{File: path, Line: d.line, Err: err})
			continue
		}
		v, err := hooks.DecodeJSON(j)
		if err != nil {
			f.Errors = append(f.Errors, &DocError{File: path, Line: d.line, Err: err})
			continue
		}
		f.add(d.line, v)
	}
	return f
}

// add takes one decoded document; a v1 List contributes each of its items.
func (f *File) add(line int, v any) {
	obj, ok := v.(map[string]any)
	if !ok {
		if v != nil { // an empty document is no error
			f.Errors = append(f.Errors, &DocError{File: f.Path, Line: line,
				Err: fmt.Errorf("expected a resource object, got %s", phrase.TypeOf(v))})
		}
		return
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	switch {
	case apiVersion == "v1" && kind == "List":
		items, _ := obj["items"].([]any)
		for _, it := range items {
			f.add(line, it)
		}
	case apiVersion == "v1" && kind == "ConfigMap":
		if err := f.ConfigMaps.add(obj); err != nil {
			f.Errors = append(f.Errors, &DocError{File: f.Path, Line: line, Err: err})
		}
	case apiVersion == "apiextensions.k8s.io/v1" && kind == "CustomResourceDefinition":
		if c, ok := crdOf(obj); ok {
			f.CRDs = append(f.CRDs, c)
		}
	case apiVersion == "v1" && kind == "Secret":
		if err := f.Secrets.add(obj); err != nil {
			f.Errors = append(f.Errors, &DocError{File: f.Path, Line: line, Err: err})
		}
	case IsLibrary(obj):
		l, err := ReadLibrary(f.Path, line, obj)
		if err != nil {
			f.Errors = append(f.Errors, &DocError{File: f.Path, Line: line, Ref: refOfLibrary(obj), Err: err})
			return
		}
		f.Libraries = append(f.Libraries, l)
	case IsController(obj):
		c, err := ReadController(f.Path, line, obj)
		if err == nil && c.Name == "" {
			err = errors.New("metadata.name is required")
		}
		if err != nil {
			f.Errors = append(f.Errors, &DocError{File: f.Path, Line: line, Ref: docRef(kinds.Lookup(kind), obj), Err: err})
			return
		}
		f.Controllers = append(f.Controllers, c)
	}
}

// IsController reports whether obj, in JSON shape, claims to be a controller resource of
// one of Kinds.
func IsController(obj map[string]any) bool {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	return apiVersion == v1alpha1.GroupVersion.String() && kinds.Lookup(kind) != nil
}

// ReadController decodes obj, a controller resource (IsController) in JSON shape found at
// line of path, strictly. Unlike Parse, it accepts a resource without metadata.name, for a
// caller that reports that itself and checks the rest.
func ReadController(path string, line int, obj map[string]any) (*Controller, error) {
	kind, _ := obj["kind"].(string)
	c, err := decode(kinds.Lookup(kind), obj)
	if err != nil {
		return nil, err
	}
	c.File, c.Line, c.Object = path, line, obj
	return c, nil
}

// CheckObject returns why Parse would not read obj, a ConfigMap or Secret in JSON shape
// (`configmap/NAME: data.KEY: expected a string`); nil for any other object.
func CheckObject(obj map[string]any) error {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	switch {
	case apiVersion == "v1" && kind == "ConfigMap":
		return ConfigMaps{}.add(obj)
	case apiVersion == "v1" && kind == "Secret":
		return Secrets{}.add(obj)
	}
	return nil
}

// docRef names a controller document that could not be decoded, KIND/NAME, or is empty when
// the document has no name.
func docRef(kind *reconcile.Descriptor, obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	if name, _ := meta["name"].(string); name != "" {
		return kind.Ref(name)
	}
	return ""
}

// DecodeStrict decodes YAML or JSON data into v, refusing fields v does not have; the error
// names an unknown field by its path when it can.
func DecodeStrict(data []byte, v any) error {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	var doc any
	if err := json.Unmarshal(j, &doc); err != nil {
		return err
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return fmt.Errorf("expected an object, got %s", phrase.TypeOf(doc))
	}
	return decodeStrict(obj, v)
}

func decodeStrict(obj map[string]any, v any) error { return admission.DecodeStrict(obj, v) }

type document struct {
	line int // 1-based line of the document's first line
	text []byte
}

// splitDocuments splits a YAML stream at its `---` separator lines, remembering where each
// document starts so that errors can point into the file.
func splitDocuments(data []byte) []document {
	var docs []document
	var cur bytes.Buffer
	start, n := 1, 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), len(data)+1)
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "---" || strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "---\t") {
			if strings.TrimSpace(cur.String()) != "" {
				docs = append(docs, document{line: start, text: bytes.Clone(cur.Bytes())})
			}
			cur.Reset()
			start = n + 1
			continue
		}
		if start == n && isBlankOrComment(line) {
			start++ // a document starts at its first line of content
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	if strings.TrimSpace(cur.String()) != "" {
		docs = append(docs, document{line: start, text: cur.Bytes()})
	}
	return docs
}

func isBlankOrComment(line string) bool {
	t := strings.TrimSpace(line)
	return t == "" || strings.HasPrefix(t, "#")
}
