package stdlib

import (
	"bytes"
	"errors"
	"io"

	"sigs.k8s.io/yaml"
	goyaml "sigs.k8s.io/yaml/goyaml.v2"
)

// YAML is the yaml module, with the semantics of sigs.k8s.io/yaml (YAML as a superset of
// the JSON shape, the way Kubernetes reads manifests).
//
//	encode(value) -> string
//	    YAML of value with object keys sorted, as `kubectl` would print it. Errors as json.encode.
//	decode(text) -> value
//	    Parses one YAML document into the JSON shape: mappings to dicts with string keys,
//	    numbers to int when integral and within 64 bits, float otherwise (as json.decode).
//	    Keys that are not strings (1, true) become strings, as in Kubernetes. An empty
//	    document decodes to null. Duplicate keys and several documents are errors.
//
// Every result is capped by Env.MaxBytes.
var YAML = &Module{
	Name: "yaml",
	Functions: map[string]Func{
		"encode": define("yaml.encode", []string{"value"}, yamlEncode),
		"decode": define("yaml.decode", []string{"text"}, yamlDecode),
	},
}

func yamlEncode(env *Env, a *args) (any, error) {
	j, err := encodeJSON(a.value(0), env.maxBytes(), "", "")
	if err != nil {
		return nil, a.argErrorf(0, "%w", err)
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return nil, a.argErrorf(0, "%v", err)
	}
	if err := a.reserve(env, int64(len(y))); err != nil {
		return nil, err
	}
	return string(y), nil
}

func yamlDecode(env *Env, a *args) (any, error) {
	s, err := a.string(0)
	if err != nil {
		return nil, err
	}
	if err := singleDocument([]byte(s)); err != nil {
		return nil, a.argErrorf(0, "invalid YAML: %v", err)
	}
	j, err := yaml.YAMLToJSONStrict([]byte(s))
	if err != nil {
		return nil, a.argErrorf(0, "invalid YAML: %v", err)
	}
	v, err := decodeJSON(j)
	if err != nil {
		return nil, a.argErrorf(0, "invalid YAML: %v", err)
	}
	return v, nil
}

// singleDocument fails when a document after the first holds a value: YAMLToJSON would read
// the first and silently drop the rest. Empty documents (a trailing ---) are fine. Syntax
// errors in the first document are left to YAMLToJSON to report.
func singleDocument(text []byte) error {
	dec := goyaml.NewDecoder(bytes.NewReader(text))
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil
	}
	for {
		doc = nil
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil || doc != nil {
			return errors.New("several documents (separated by ---); decode them one at a time")
		}
	}
}
