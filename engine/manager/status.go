package manager

import (
	"context"
	"encoding/json"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/composite"
)

// status is what the manager knows about one controller generation.
type status struct {
	ready, compiled             metav1.ConditionStatus
	readyReason, readyMsg       string
	compiledReason, compiledMsg string
	parents, children           int
}

func statusOK(r *composite.Runner) status {
	p, c := r.Counts()
	return status{ready: metav1.ConditionTrue, readyReason: "Running", readyMsg: "the controller is reconciling its parents",
		compiled: metav1.ConditionTrue, compiledReason: "Compiled", compiledMsg: "every hook compiled",
		parents: p, children: c}
}

// writeStatus merges st into the controller's status and patches the status subresource,
// only when something changed. Condition transition times move only on a status change.
func (m *Manager) writeStatus(ctx context.Context, u *unstructured.Unstructured, st status) error {
	var cur v1alpha1.ControllerStatus
	if raw, ok := u.Object["status"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &cur)
	}
	next := *cur.DeepCopy()
	next.ObservedGeneration = u.GetGeneration()
	next.Parents, next.Children = int32(st.parents), int32(st.children)
	meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: v1alpha1.ConditionHooksCompiled,
		Status: st.compiled, Reason: st.compiledReason, Message: st.compiledMsg, ObservedGeneration: u.GetGeneration()})
	meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady,
		Status: st.ready, Reason: st.readyReason, Message: st.readyMsg, ObservedGeneration: u.GetGeneration()})
	if equalStatus(cur, next) {
		return nil
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": u.GetUID()}, "status": next})
	if err != nil {
		return err
	}
	_, err = m.opts.Dynamic.Resource(v1alpha1.CompositeControllerResource).Patch(ctx, u.GetName(),
		types.MergePatchType, body, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func equalStatus(a, b v1alpha1.ControllerStatus) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// refreshStatuses updates the counts of running controllers every StatusInterval.
func (m *Manager) refreshStatuses(ctx context.Context) {
	t := time.NewTicker(m.opts.StatusInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.mu.Lock()
		var todo []*composite.Runner
		var names []string
		for name, r := range m.runners {
			if r.runner != nil {
				todo = append(todo, r.runner)
				names = append(names, name)
			}
		}
		m.mu.Unlock()
		for i, r := range todo {
			obj, exists, _ := m.cc.Indexer().GetByKey(names[i])
			if !exists {
				continue
			}
			if err := m.writeStatus(ctx, obj.(*unstructured.Unstructured), statusOK(r)); err != nil {
				m.opts.Log.Info("controller status not written", "compositecontroller", names[i], "error", err.Error())
			}
		}
	}
}

// configMaps reads hook sources kept in ConfigMaps.
type configMaps struct{ kube kubernetes.Interface }

func (c configMaps) ConfigMapKey(ctx context.Context, ref v1alpha1.ConfigMapKeyRef) (string, error) {
	cm, err := c.kube.CoreV1().ConfigMaps(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	src, ok := cm.Data[ref.Key]
	if !ok {
		return "", &keyError{ref}
	}
	return src, nil
}

type keyError struct{ ref v1alpha1.ConfigMapKeyRef }

func (e *keyError) Error() string {
	return "ConfigMap " + e.ref.Namespace + "/" + e.ref.Name + " has no key " + e.ref.Key
}
