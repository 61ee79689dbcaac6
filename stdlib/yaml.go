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
//	    document decodes to null. Duplicate keys and several documents are errors. Decoding
//	    costs about 600 bytes per node; that much per character that may start or separate
//	    one (",:-[{*?|>&!" and line breaks) is checked against the memory budget first.
//
// Every result is capped by Env.MaxBytes.
var YAML = &Module{
	Name: "yaml",
	Functions: map[string]Func{
		"encode": define("yaml.encode", []string{"value"}, yamlEncode),
		"decode": define("yaml.decode", []string{"text"}, yamlDecode),
	},
}

// perYAMLNode is what decoding one YAML node costs, through the YAML library's tree, JSON
// text and the JSON shape to the hook's own value: about 600 bytes. It is charged for every
// character that may start or separate a node (",:-[{*?|>&!" and line breaks), which
// overestimates for text with many hyphens or colons inside scalars. "- 0\n" repeated
// allocated 190 times its text in one call, and took seconds.
const perYAMLNode = 600

// decodedYAMLSize estimates what decoding text allocates; see perYAMLNode.
func decodedYAMLSize(text string) int64 {
	var nodes int64 = 1
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case ',', ':', '-', '[', '{', '*', '?', '|', '>', '&', '!', '\n':
			nodes++
		}
	}
	return 2*int64(len(text)) + nodes*perYAMLNode
}

func yamlEncode(env *Env, a *args) (any, error) {
	j, err := encodeJSON(a.value(0), env.maxBytes(), env.Reserve, "", "")
	if err != nil {
		return nil, a.argErrorf(0, "%w", err)
	}
	// JSONToYAML parses the JSON into the YAML library's tree before writing YAML.
	if err := a.reserve(env, decodedYAMLSize(string(j))); err != nil {
		return nil, err
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
	if err := a.reserve(env, decodedYAMLSize(s)); err != nil {
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
