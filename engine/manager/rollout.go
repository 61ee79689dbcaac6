package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/reconcile"
	"metascript.dev/metascript/engine/rollout"
	"metascript.dev/metascript/scripting"
)

// rolloutTick is how often a staged hook change is advanced and its status written.
const rolloutTick = time.Second

// stage decides how the hooks of controller u, built as b, reach its parents (the hooks
// with the libraries they loaded: an edit of a library stages like an edit of a hook).
// Without spec.hookRollout it returns nil: every parent runs them. With one, it returns the rollout
// from the revision the parents ran (the in-memory rollout of the runner b replaces, else
// the controller's status.hookRollout) to b's: complete at once when there is none, when
// the hooks did not change, or when the previous hooks cannot run beside the new ones
// (RolloutNotStaged Warning); otherwise staged, b's runner running the previous hooks,
// compiled again, for the parents not moved yet.
func (m *Manager) stage(ctx context.Context, u *unstructured.Unstructured, b *built, cur *running) *rollout.Rollout {
	decl := b.declared
	if decl.HookRollout == nil {
		return nil
	}
	policy := rollout.PolicyOf(decl.HookRollout)
	rev, raw := rollout.Revision(rollout.Hooks{Hooks: decl.Hooks, Script: decl.Script, Libraries: b.libs.specs()})
	b.runner.Stage(rev, nil, nil)
	var prior *v1alpha1.HookRolloutStatus
	if cur != nil && cur.rollout != nil && cur.uid == u.GetUID() {
		st := cur.rollout.Status()
		prior = &st
	} else {
		prior = statusRollout(u)
	}
	if prior == nil || prior.StableRevision == rev || prior.Stable == nil || prior.StableRevision == "" {
		return rollout.Complete(policy, rev, raw)
	}
	var ro *rollout.Rollout
	if cur != nil && cur.rollout != nil && cur.uid == u.GetUID() && cur.rollout.Revision() == rev {
		ro = cur.rollout // an edit of anything but the hooks: the rollout goes on as it was
		ro.SetPolicy(policy)
	} else {
		ro = rollout.Start(policy, prior.StableRevision, prior.Stable.Raw, rev, prior)
	}
	if !ro.Staged() {
		return ro
	}
	previous, err := m.compileStable(ctx, b, prior.Stable.Raw)
	if err != nil {
		m.opts.Recorder.Event(u, corev1.EventTypeWarning, "RolloutNotStaged",
			fmt.Sprintf("hooks revision %s reaches every parent at once: %v", rev, err))
		return rollout.Complete(policy, rev, raw)
	}
	previous.Revision = prior.StableRevision
	b.runner.Stage(rev, previous, ro)
	return ro
}

// statusRollout is the controller's status.hookRollout, if it has one.
func statusRollout(u *unstructured.Unstructured) *v1alpha1.HookRolloutStatus {
	raw, ok, _ := unstructured.NestedMap(u.Object, "status", "hookRollout")
	if !ok {
		return nil
	}
	var st v1alpha1.HookRolloutStatus
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err != nil {
		return nil
	}
	return &st
}

// compileStable builds the hooks a rollout's stable revision holds (HookRolloutStatus.Stable)
// for b's controller, against the libraries they loaded as they were then (the libraries
// the controller's scope holds now when Stable predates recording them). They must speak the
// protocol b's hooks speak: the same version of each hook, and a customize hook in both or
// neither, since b's kind builds every request.
func (m *Manager) compileStable(ctx context.Context, b *built, raw []byte) (*reconcile.Program, error) {
	var stable rollout.Hooks
	if err := json.Unmarshal(raw, &stable); err != nil {
		return nil, fmt.Errorf("the previous hooks kept in status.hookRollout.stable do not decode: %w", err)
	}
	decl := *b.declared
	for _, name := range []string{b.kind.Primary().Name, reconcile.CustomizeHook.Name} {
		was, is := stable.Hooks[name], decl.Hooks[name]
		if (was == nil) != (is == nil) {
			return nil, fmt.Errorf("hooks.%s was added or removed", name)
		}
	}
	for name, is := range decl.Hooks {
		if was := stable.Hooks[name]; was != nil && reconcile.HookVersion(was) != reconcile.HookVersion(is) {
			return nil, fmt.Errorf("hooks.%s changed its version", name)
		}
	}
	decl.Hooks, decl.Script = stable.Hooks, stable.Script
	var libs scripting.Libraries = b.libs
	if stable.Libraries != nil {
		set := &scripting.LibrarySet{ScopeName: b.libs.Scope(), ByName: map[string]*scripting.Library{}}
		for name, spec := range stable.Libraries {
			lib, err := hooks.LibraryOf(name, *spec)
			if err != nil {
				return nil, fmt.Errorf("the previous revision of library %s kept in status.hookRollout.stable: %w", name, err)
			}
			set.ByName[name] = lib
		}
		libs = set
	}
	objects := clusterObjects{kube: m.opts.Kube, namespace: decl.Namespace}
	if b.account != nil {
		// The previous hooks' sources and Secrets are read as the account, as the new ones.
		checks := referenceChecks(b.kind, &decl, b.account.User)
		if err := m.checkReferences(ctx, checks); err != nil {
			return nil, fmt.Errorf("the previous hooks are not read: %w", err)
		}
		objects.checked = checkedObjects(checks)
		b.checks = append(b.checks, checks...)
	}
	invokers, _, err := m.compile(ctx, b.kind.Ref(decl.Key()), &decl, b.kind.Hooks, b.compiler, libs, objects)
	if err != nil {
		var be *buildError
		if errors.As(err, &be) {
			err = be.err
		}
		return nil, fmt.Errorf("the previous hooks do not build: %w", err)
	}
	return &reconcile.Program{Hooks: invokers}, nil
}

// drive advances run's staged rollout every rolloutTick until it completes or ctx ends: it
// writes the controller's status, then commits the step, records an Event at each step, halt
// and completion, and syncs again the parents a step moved.
func (m *Manager) drive(ctx context.Context, k key, run *running) {
	t := time.NewTicker(rolloutTick)
	defer t.Stop()
	last, lastErr := run.rollout.Status(), ""
	resync := false // a step moved parents and they have not synced again since
	for {
		// The first Advance waits a tick: the runner's parent events are still arriving.
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, moved, err := run.rollout.Advance(time.Now(), run.runner.StagedParents())
		if ctx.Err() != nil {
			return
		}
		resync = resync || moved
		obj, exists, _ := m.kinds[k.kind].informer.Indexer().GetByKey(k.name)
		if !exists {
			continue // being deleted: nothing keeps the step, so no parent takes it
		}
		u := obj.(*unstructured.Unstructured)
		if err != nil && err.Error() != lastErr {
			m.opts.Recorder.Event(u, corev1.EventTypeWarning, "InvalidRolloutPolicy", err.Error())
		}
		lastErr = ""
		if err != nil {
			lastErr = err.Error()
		}
		// The step takes effect (Commit) once the status records it, and its parents sync
		// again after that: an engine that restarts resumes from the step, so no parent
		// goes back, and a reader of the status never sees a parent on the edit under the
		// step before. A failed write is tried again at the next tick.
		if werr := m.writeStatus(ctx, k, u, m.statusOK(k, run)); werr != nil {
			m.opts.Log.Info("controller status not written", "controller", m.ref(k), "error", werr.Error())
			continue
		}
		m.rolloutEvents(u, last, st)
		run.rollout.Commit()
		if resync {
			run.runner.Resync()
			resync = false
		}
		last = st
		if st.Phase == v1alpha1.RolloutComplete {
			return
		}
	}
}

// rolloutEvents records on the controller what changed between two statuses of its rollout.
func (m *Manager) rolloutEvents(u *unstructured.Unstructured, was, is v1alpha1.HookRolloutStatus) {
	switch {
	case is.Phase == v1alpha1.RolloutHalted && was.Phase != v1alpha1.RolloutHalted:
		m.opts.Recorder.Event(u, corev1.EventTypeWarning, "RolloutHalted", fmt.Sprintf(
			"hooks revision %s halted at step %d: parent %s failed: %s; the other parents stay on revision %s",
			is.Revision, is.Step, is.FailedParent, is.Message, is.StableRevision))
	case is.Phase == v1alpha1.RolloutComplete && was.Phase != v1alpha1.RolloutComplete:
		m.opts.Recorder.Event(u, corev1.EventTypeNormal, "RolloutComplete",
			fmt.Sprintf("every parent runs hooks revision %s", is.Revision))
	case is.Step != was.Step && is.Phase == v1alpha1.RolloutProgressing:
		m.opts.Recorder.Event(u, corev1.EventTypeNormal, "RolloutStep", fmt.Sprintf(
			"hooks revision %s: step %d, %d of %d parents", is.Revision, is.Step, is.UpdatedParents, is.Parents))
	}
}
