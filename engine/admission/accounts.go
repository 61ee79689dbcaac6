package admission

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"metascript.dev/metascript/apis/v1alpha1"
	"metascript.dev/metascript/engine/hooks"
	"metascript.dev/metascript/engine/reconcile"
)

// A controller acts as its ServiceAccount: every write the engine makes for it impersonates
// the account, and its hooks are handed what the account may read. So a controller may name
// an account only if whoever writes it may act as that account, or writing a controller
// would borrow rights its writer does not hold. RBAC says who may act as an account with
// either of two rights, and the webhook accepts either:
//   - "use" on serviceaccounts in the metascript.dev group, named the account, in its
//     namespace: the right to have a controller act as it, and nothing more. This is the
//     one a platform grants its tenants.
//   - "impersonate" on serviceaccounts (the core group), named the account: whoever holds it
//     may already act as the account through the API server itself (kubectl --as), so a
//     controller lends them nothing they lack.

// The rights that let a user have a controller act as a ServiceAccount.
var (
	// UseAccount is "use" on serviceaccounts.metascript.dev, the dedicated right.
	UseAccount = accountRight{Verb: "use", Group: v1alpha1.GroupVersion.Group}
	// ImpersonateAccount is "impersonate" on serviceaccounts, RBAC's own.
	ImpersonateAccount = accountRight{Verb: "impersonate"}
)

// accountRight is a verb on the serviceaccounts resource of an API group.
type accountRight struct{ Verb, Group string }

func (r accountRight) String() string {
	res := "serviceaccounts"
	if r.Group != "" {
		res += "." + r.Group
	}
	return fmt.Sprintf("%q on %s", r.Verb, res)
}

// accountProblems returns why req's user may not have the controller obj act as the
// ServiceAccount it names (reconcile.ServiceAccount: a namespaced controller's default is its
// namespace's "default"). Only a CREATE, and an UPDATE that changes that account, are
// checked; a controller acting as the engine's own account (cluster-scoped, without one) is
// no business of this check, but of RBAC on cluster-scoped controllers.
func accountProblems(ctx context.Context, reviews authorizationclient.SubjectAccessReviewInterface, kind *reconcile.Descriptor,
	req *admissionv1.AdmissionRequest, obj map[string]any) []Problem {
	decl, sa := accountOf(kind, obj)
	if sa == nil || req.Operation == admissionv1.Update && sameAccount(sa, oldAccount(kind, req)) {
		return nil
	}
	ref := kind.Ref(key(req.Namespace, req.Name))
	which := ""
	if decl.ServiceAccount == nil {
		which = " (its namespace's default account: spec.serviceAccount is not set)"
	}
	for _, right := range []accountRight{UseAccount, ImpersonateAccount} {
		allowed, err := mayActAs(ctx, reviews, req.UserInfo, right, sa)
		if err != nil {
			return []Problem{{Field: "serviceAccount", Ref: ref, Err: fmt.Errorf("checking whether %q may act as ServiceAccount %s/%s: %w",
				req.UserInfo.Username, sa.Namespace, sa.Name, err)}}
		}
		if allowed {
			return nil
		}
	}
	return []Problem{{Field: "serviceAccount", Ref: ref, Err: fmt.Errorf(
		"user %q may not act as ServiceAccount %s/%s%s: it needs %s (or %s) for that account in namespace %s",
		req.UserInfo.Username, sa.Namespace, sa.Name, which, UseAccount, ImpersonateAccount, sa.Namespace)}}
}

// accountOf reads controller obj of kind and returns the account it acts as; nil for the
// engine's own, or when obj cannot be read or names an account the engine refuses (Check
// reports those).
func accountOf(kind *reconcile.Descriptor, obj map[string]any) (*reconcile.Declared, *v1alpha1.ServiceAccountReference) {
	if obj == nil {
		return nil, nil
	}
	decl, err := Read(kind, obj)
	if err != nil {
		return nil, nil
	}
	sa, _ := reconcile.ServiceAccount(kind, decl)
	return decl, sa
}

// oldAccount is the account the controller acted as before an UPDATE; nil when that is
// unknown, so that the update is checked.
func oldAccount(kind *reconcile.Descriptor, req *admissionv1.AdmissionRequest) *v1alpha1.ServiceAccountReference {
	v, err := hooks.DecodeJSON(req.OldObject.Raw)
	if err != nil {
		return nil
	}
	old, _ := v.(map[string]any)
	if meta, _ := old["metadata"].(map[string]any); kind.Namespaced && meta != nil && meta["namespace"] == nil {
		meta["namespace"] = req.Namespace
	}
	_, sa := accountOf(kind, old)
	return sa
}

func sameAccount(a, b *v1alpha1.ServiceAccountReference) bool {
	return a != nil && b != nil && *a == *b
}

// mayActAs asks, by SubjectAccessReview, whether user holds right on ServiceAccount sa.
func mayActAs(ctx context.Context, reviews authorizationclient.SubjectAccessReviewInterface, user authenticationv1.UserInfo,
	right accountRight, sa *v1alpha1.ServiceAccountReference) (bool, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	got, err := reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, Groups: user.Groups, UID: user.UID, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: sa.Namespace, Verb: right.Verb, Group: right.Group,
			Resource: "serviceaccounts", Name: sa.Name},
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return got.Status.Allowed, nil
}
