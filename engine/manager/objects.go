package manager

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/reconcile"
)

// clusterObjects reads, when a controller is built, the keys of ConfigMaps and Secrets its
// hooks refer to: hook sources (configMapRef), and the CA bundles, credentials and client
// certificates of webhooks. Later changes to these objects take effect when the controller
// is next edited. It implements hooks.SourceResolver and hooks.SecretReader.
//
// With namespace set (a namespaced controller's), it reads only there: a reference without a
// namespace means that one, and one naming another is refused, so that a tenant cannot have
// the engine read, or send to its own webhook, another namespace's Secret.
//
// With checked set (a controller with an account), it reads only those objects: the ones the
// account was found to be allowed to get (references.go). Any other read is refused, so that
// nothing the checks missed is read with the engine's rights.
type clusterObjects struct {
	kube      kubernetes.Interface
	namespace string
	checked   map[objectKey]bool
}

var _ hooks.SecretReader = clusterObjects{}

// confine returns the namespace a reference reads from, or why it may not.
func (c clusterObjects) confine(kind, namespace, name string) (string, error) {
	ns, err := reconcile.ReferenceNamespace(c.namespace, kind, namespace, name)
	if err != nil || c.checked == nil {
		return ns, err
	}
	res := configMapsResource.Resource
	if kind == "Secret" {
		res = secretsResource.Resource
	}
	if !c.checked[objectKey{resource: res, namespace: ns, name: name}] {
		return "", fmt.Errorf("%s %s/%s: not among the objects checked for the controller's account; not read", kind, ns, name)
	}
	return ns, nil
}

func (c clusterObjects) ConfigMapKey(ctx context.Context, ref v1alpha1.ConfigMapKeyRef) (string, error) {
	ns, err := c.confine("ConfigMap", ref.Namespace, ref.Name)
	if err != nil {
		return "", err
	}
	ref.Namespace = ns
	cm, err := c.kube.CoreV1().ConfigMaps(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("ConfigMap %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	v, ok := cm.Data[ref.Key]
	if !ok {
		return "", &keyError{kind: "ConfigMap", namespace: ref.Namespace, name: ref.Name, key: ref.Key}
	}
	return v, nil
}

func (c clusterObjects) SecretKey(ctx context.Context, ref v1alpha1.SecretKeyRef) ([]byte, error) {
	ns, err := c.confine("Secret", ref.Namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	ref.Namespace = ns
	s, err := c.kube.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	v, ok := s.Data[ref.Key]
	if !ok {
		return nil, &keyError{kind: "Secret", namespace: ref.Namespace, name: ref.Name, key: ref.Key}
	}
	return v, nil
}

// keyError reports a ConfigMap or Secret without the key asked for.
type keyError struct{ kind, namespace, name, key string }

func (e *keyError) Error() string {
	return e.kind + " " + e.namespace + "/" + e.name + " has no key " + e.key
}

// missingReference reports whether err says that a referenced object or key does not exist.
func missingReference(err error) bool {
	var ke *keyError
	return errors.As(err, &ke) || apierrors.IsNotFound(err)
}
