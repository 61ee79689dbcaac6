package manager

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/reconcile"
)

// status is what the manager knows about one controller generation.
type status struct {
	ready, compiled             metav1.ConditionStatus
	readyReason, readyMsg       string
	compiledReason, compiledMsg string
	parents, children           int
	// members is how many replicas share the work; 0 when the engine does not shard.
	members int
	// capped lists the hook budgets the engine's ceilings cut down.
	capped []string
	// rollout is where a staged change of the hooks stands; nil without spec.hookRollout.
	rollout *v1alpha1.HookRolloutStatus
}

// statusOK is the status of a running controller. When the engine shards, each replica
// counts what it owns from its caches (which hold its share alone) and publishes it; the
// status gives the sum of what every replica published.
func (m *Manager) statusOK(k key, run *running) status {
	r := run.runner
	p, c := r.Counts()
	if sh := m.opts.Shard; sh != nil {
		owned, children := r.ShardCounts()
		sh.RecordCounts(m.ref(k), owned, children)
		p, c = sh.Totals(m.ref(k))
	}
	st := status{ready: metav1.ConditionTrue, readyReason: "Running", readyMsg: "the controller is reconciling its parents",
		compiled: metav1.ConditionTrue, compiledReason: "Compiled", compiledMsg: "every hook compiled",
		parents: p, children: c, members: m.members(), capped: run.capped}
	if run.libraryErr != nil {
		st.compiled, st.compiledReason = metav1.ConditionFalse, "LibraryError"
		st.compiledMsg = "the hooks do not build with the libraries they load; the controller runs its last good hooks: " + run.libraryErr.Error()
	}
	if run.rollout != nil {
		ro := run.rollout.Status()
		st.rollout = &ro
	}
	return st
}

// members is how many replicas share the work, for controller statuses: 0 without sharding.
func (m *Manager) members() int {
	if m.opts.Shard == nil {
		return 0
	}
	return m.opts.Shard.Members()
}

// statusKey names a controller's status on the ring: one replica writes it.
func (m *Manager) statusKey(k key) string { return "status|" + m.ref(k) }

// writeStatus merges st into the controller's status and patches the status subresource,
// only when something changed. Condition transition times move only on a status change.
//
// When the engine shards, only the replica that leads the controller's status key writes.
func (m *Manager) writeStatus(ctx context.Context, k key, u *unstructured.Unstructured, st status) error {
	if sh := m.opts.Shard; sh != nil && !sh.Leads(m.statusKey(k)) {
		return nil
	}
	var cur v1alpha1.ControllerStatus
	if raw, ok := u.Object["status"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &cur)
	}
	next := *cur.DeepCopy()
	next.ObservedGeneration = u.GetGeneration()
	next.Parents, next.Children, next.Members = int32(st.parents), int32(st.children), int32(st.members)
	next.HookRollout = st.rollout
	meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: v1alpha1.ConditionHooksCompiled,
		Status: st.compiled, Reason: st.compiledReason, Message: st.compiledMsg, ObservedGeneration: u.GetGeneration()})
	meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady,
		Status: st.ready, Reason: st.readyReason, Message: st.readyMsg, ObservedGeneration: u.GetGeneration()})
	capped := metav1.Condition{Type: v1alpha1.ConditionBudgetsCapped, Status: metav1.ConditionFalse,
		Reason: "WithinCeilings", Message: "every hook budget is within the engine's ceilings", ObservedGeneration: u.GetGeneration()}
	if len(st.capped) > 0 {
		capped.Status, capped.Reason = metav1.ConditionTrue, "CappedByCeilings"
		capped.Message = strings.Join(st.capped, "; ") + "; the ceiling applies instead"
	}
	if st.ready == metav1.ConditionTrue {
		meta.SetStatusCondition(&next.Conditions, capped)
	}
	if equalStatus(cur, next) {
		return nil
	}
	// The counts are omitempty in the type; a merge patch without them would leave a count
	// that dropped to zero at its old value.
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&next)
	if err != nil {
		return err
	}
	raw["parents"], raw["children"] = int64(next.Parents), int64(next.Children)
	if next.Members == 0 {
		raw["members"] = nil // removes a count left by a sharded engine
	}
	if next.HookRollout == nil {
		raw["hookRollout"] = nil // removes a rollout of a policy since removed
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": u.GetUID()}, "status": raw})
	if err != nil {
		return err
	}
	_, err = m.opts.Dynamic.Resource(m.kinds[k.kind].Resource).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(),
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

// refreshStatuses updates the counts of running controllers every StatusInterval, after
// asking again about the objects the controllers with an account read (recheckReferences).
func (m *Manager) refreshStatuses(ctx context.Context) {
	t := time.NewTicker(m.opts.StatusInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.recheckReferences(ctx)
		m.mu.Lock()
		todo := map[key]*running{}
		for k, r := range m.runners {
			if r.runner != nil || m.opts.Shard != nil {
				todo[k] = r
			}
		}
		m.mu.Unlock()
		for k, r := range todo {
			obj, exists, _ := m.kinds[k.kind].informer.Indexer().GetByKey(k.name)
			if !exists {
				continue
			}
			u := obj.(*unstructured.Unstructured)
			var st status
			switch {
			case m.opts.Shard != nil:
				// The replica that writes a status may change with the ring: each refresh
				// writes what differs, from the whole status (writeStatus compares).
				st = r.st
				st.members = m.members()
				if r.runner != nil {
					st = m.statusOK(k, r)
				}
			case countsCurrent(u, r.runner):
				continue // the rest of the status changes only when the runner is replaced
			default:
				st = m.statusOK(k, r)
			}
			if err := m.writeStatus(ctx, k, u, st); err != nil {
				m.opts.Log.Info("controller status not written", "controller", m.ref(k), "error", err.Error())
			}
		}
	}
}

// countsCurrent reports whether the controller's status already holds the runner's counts and
// is of its generation: then a refresh has nothing to write, and skips building the status.
func countsCurrent(u *unstructured.Unstructured, r *reconcile.Runner) bool {
	parents, children := r.Counts()
	p, _, _ := unstructured.NestedInt64(u.Object, "status", "parents")
	c, _, _ := unstructured.NestedInt64(u.Object, "status", "children")
	g, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return p == int64(parents) && c == int64(children) && g == u.GetGeneration()
}
