package composite

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/index"
	"metascript.dev/metascript/engine/reconcile"
)

// orphanParents returns the parents whose selector may match the orphan, found through the
// parent indexes: by UID label for generated selectors, by selector term otherwise.
func (k *kind) orphanParents(u *unstructured.Unstructured, parents []cache.Indexer) []reconcile.Request {
	lbls := u.GetLabels()
	idx := parents[0]
	var out []reconcile.Request
	add := func(p *unstructured.Unstructured) {
		if key, err := cache.MetaNamespaceKeyFunc(p); err == nil {
			out = append(out, reconcile.Request{Key: key})
		}
	}
	if k.generate {
		uid, ok := lbls[ControllerUIDLabel]
		if !ok {
			return nil
		}
		objs, _ := idx.ByIndex(index.UID, uid)
		for _, p := range objs {
			add(p.(*unstructured.Unstructured))
		}
		return out
	}
	ns := ""
	if k.parent.Namespaced {
		ns = u.GetNamespace()
	}
	for _, p := range k.selectors.Candidates(idx, ns, lbls) {
		add(p)
	}
	return out
}
