package manager

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/identity"
	"metascript.dev/metascript/engine/reconcile"
)

// Configuration read as the tenant. A controller with an account (spec.serviceAccount; a
// namespaced controller's, "default" unless named) has the engine read an object its
// configuration names only if the account may get that very object: every ConfigMap and
// Secret of reconcile.References, and every hook library its hooks load. The engine asks by
// SubjectAccessReview with the object's name (identity.Reviewer, whose answers last
// identity.ReviewTTL), before it reads anything; a refusal reads nothing and the controller
// does not run (ReferenceRefused). The manager asks again every StatusInterval
// (recheckReferences): a revoked get stops a running controller, and a granted one starts a
// refused controller, within ReviewTTL and one interval. A controller without an account
// reads with the engine's rights.
//
// A review, not a read impersonating the account: the review's answer is cached and bounded
// like every other read check, so the periodic re-check costs no request while it holds, and
// the object's content is read once per build, by the engine, never fetched again to learn
// whether it still may be.

// referenceCheck is one object a controller's configuration names and the access its
// account needs for the engine to read it: get on that object.
type referenceCheck struct {
	// field is where the configuration names it: spec.hooks.sync.webhook.authorization.secretRef,
	// or, for a library, the hook that loads it (spec.hooks.sync).
	field  string
	access identity.Access
}

var (
	secretsResource    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	configMapsResource = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// referenceChecks are the checks of every ConfigMap and Secret decl names, for user. A
// reference a namespaced controller may not make at all (another namespace) is left out:
// the build refuses it (clusterObjects.confine).
func referenceChecks(kind *reconcile.Descriptor, decl *reconcile.Declared, user string) []referenceCheck {
	var out []referenceCheck
	for _, r := range reconcile.References(kind, decl) {
		ns, err := reconcile.ReferenceNamespace(decl.Namespace, r.Kind, r.Namespace, r.Name)
		if err != nil {
			continue
		}
		res := configMapsResource
		if r.Kind == "Secret" {
			res = secretsResource
		}
		out = append(out, referenceCheck{field: "spec." + r.Field,
			access: identity.Access{User: user, Verb: "get", Resource: res, Namespace: ns, Name: r.Name}})
	}
	return out
}

// libraryCheck is the check of library name, loaded by the hook at field of a controller of
// namespace ns (a NamespacedHookLibrary there; a HookLibrary when ns is empty), for user.
func libraryCheck(field, user, ns, name string) referenceCheck {
	res := v1alpha1.HookLibraryResource
	if ns != "" {
		res = v1alpha1.NamespacedHookLibraryResource
	}
	return referenceCheck{field: field, access: identity.Access{User: user, Verb: "get", Resource: res, Namespace: ns, Name: name}}
}

// checkReferences reviews every check. It returns nil when all are allowed, a *buildError
// ReferenceRefused naming each refusal (re-checked later: see recheckReferences), or one
// retried when a review could not be made.
func (m *Manager) checkReferences(ctx context.Context, checks []referenceCheck) error {
	var refused []error
	for _, c := range checks {
		err := m.opts.Identities.Reviewer.Check(ctx, c.access)
		var re *identity.ReadRefusedError
		switch {
		case errors.As(err, &re):
			refused = append(refused, fmt.Errorf("%s: %w", c.field, err))
		case err != nil:
			return &buildError{reason: "ReferenceRefused", err: fmt.Errorf("%s: %w", c.field, err), retry: true}
		}
	}
	if len(refused) > 0 {
		return &buildError{reason: "ReferenceRefused", err: errors.Join(refused...), recheck: checks}
	}
	return nil
}

// refusedNow reports whether the account may no longer get one of checks, as the Reviewer
// answers now; ok is false when a review could not be made (nothing is decided then).
func (m *Manager) refusedNow(ctx context.Context, checks []referenceCheck) (refused, ok bool) {
	for _, c := range checks {
		err := m.opts.Identities.Reviewer.Check(ctx, c.access)
		var re *identity.ReadRefusedError
		switch {
		case errors.As(err, &re):
			return true, true
		case err != nil:
			return false, false
		}
	}
	return false, true
}

// recheckReferences asks again about what each controller with an account had the engine
// read, or was refused: a running controller whose account may no longer get one of those
// objects, and a refused one whose account now may get them all, is rebuilt (sync), which
// stops the first and starts the second.
func (m *Manager) recheckReferences(ctx context.Context) {
	m.mu.Lock()
	todo := map[key]*running{}
	for k, r := range m.runners {
		if len(r.checks) > 0 {
			todo[k] = r
		}
	}
	m.mu.Unlock()
	for k, r := range todo {
		refused, ok := m.refusedNow(ctx, r.checks)
		if !ok || refused == (r.runner == nil) {
			continue
		}
		r.recheck.Store(true)
		m.queue.Add(k)
	}
}

// objectKey names one object a clusterObjects may read.
type objectKey struct {
	resource, namespace, name string
}

// checkedObjects is the set of objects checks allow reading.
func checkedObjects(checks []referenceCheck) map[objectKey]bool {
	out := make(map[objectKey]bool, len(checks))
	for _, c := range checks {
		out[objectKey{resource: c.access.Resource.Resource, namespace: c.access.Namespace, name: c.access.Name}] = true
	}
	return out
}
