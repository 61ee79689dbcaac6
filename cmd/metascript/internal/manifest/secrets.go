package manifest

import (
	"context"
	"encoding/base64"
	"fmt"

	"metascript.dev/metascript/apis/v1alpha1"
)

// Secrets holds the data of the Secrets found in files (data decoded from base64, stringData
// taking precedence as the API server gives it), keyed as ConfigMaps are. It implements
// hooks.SecretReader, so that a webhook whose connection settings name a Secret is built
// offline when the Secret is in one of the files.
type Secrets map[string]map[string][]byte

func (m Secrets) add(obj map[string]any) error {
	key, name, err := objectKey("Secret", obj)
	if err != nil {
		return err
	}
	data := map[string][]byte{}
	raw, _ := obj["data"].(map[string]any)
	for k, v := range raw {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("secret/%s: data.%s: expected a base64 string", name, k)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("secret/%s: data.%s: %v", name, k, err)
		}
		data[k] = b
	}
	plain, _ := obj["stringData"].(map[string]any)
	for k, v := range plain {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("secret/%s: stringData.%s: expected a string", name, k)
		}
		data[k] = []byte(s)
	}
	m[key] = data
	return nil
}

// SecretKey returns the value of ref's key. A Secret written without a namespace matches a
// reference from any namespace.
func (m Secrets) SecretKey(_ context.Context, ref v1alpha1.SecretKeyRef) ([]byte, error) {
	data, ok := find(m, ref.Namespace, ref.Name)
	if !ok {
		return nil, fmt.Errorf("Secret %s/%s is not in the given files; pass the file that holds it",
			ref.Namespace, ref.Name)
	}
	v, ok := data[ref.Key]
	if !ok {
		return nil, fmt.Errorf("Secret %s/%s has no key %q", ref.Namespace, ref.Name, ref.Key)
	}
	return v, nil
}
