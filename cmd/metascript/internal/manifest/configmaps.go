package manifest

import (
	"context"
	"errors"
	"fmt"

	"metascript.dev/metascript/apis/v1alpha1"
)

// ConfigMaps holds the data of the ConfigMaps found in files, keyed by "namespace/name"; a
// ConfigMap written without a namespace is kept under "/name". It implements
// hooks.SourceResolver, so a hook whose source is in a configMapRef runs offline when the
// ConfigMap is in one of the files.
type ConfigMaps map[string]map[string]string

func (m ConfigMaps) add(obj map[string]any) error {
	key, name, err := objectKey("ConfigMap", obj)
	if err != nil {
		return err
	}
	data := map[string]string{}
	raw, _ := obj["data"].(map[string]any)
	for k, v := range raw {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("configmap/%s: data.%s: expected a string", name, k)
		}
		data[k] = s
	}
	m[key] = data
	return nil
}

// ConfigMapKey returns the value of ref's key. A ConfigMap written without a namespace
// matches a reference from any namespace, as `kubectl apply -n` would place it.
func (m ConfigMaps) ConfigMapKey(_ context.Context, ref v1alpha1.ConfigMapKeyRef) (string, error) {
	data, ok := find(m, ref.Namespace, ref.Name)
	if !ok {
		return "", fmt.Errorf("source in ConfigMap %s/%s is not in the given files; pass the file that holds it",
			ref.Namespace, ref.Name)
	}
	v, ok := data[ref.Key]
	if !ok {
		return "", fmt.Errorf("ConfigMap %s/%s has no key %q", ref.Namespace, ref.Name, ref.Key)
	}
	return v, nil
}

// objectKey is where ConfigMaps and Secrets keep the data of obj, a resource of kind:
// "namespace/name", or "/name" for one written without a namespace.
func objectKey(kind string, obj map[string]any) (key, name string, err error) {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ = meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	if name == "" {
		return "", "", errors.New(kind + ": metadata.name is required")
	}
	return ns + "/" + name, name, nil
}

// find returns the data of the object namespace/name, or of an object of that name written
// without a namespace.
func find[V any](m map[string]map[string]V, namespace, name string) (map[string]V, bool) {
	if data, ok := m[namespace+"/"+name]; ok {
		return data, true
	}
	data, ok := m["/"+name]
	return data, ok
}
