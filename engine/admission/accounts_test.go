package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"metascript.dev/metascript/engine/kinds"
)

// grants answers SubjectAccessReviews from a fixed list of rights, "VERB GROUP NAMESPACE/NAME",
// and records what it was asked.
type grants struct {
	allowed []string
	err     error
	asked   []authorizationv1.SubjectAccessReviewSpec
}

func (g *grants) Create(_ context.Context, r *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	g.asked = append(g.asked, r.Spec)
	if g.err != nil {
		return nil, g.err
	}
	a := r.Spec.ResourceAttributes
	right := fmt.Sprintf("%s %s %s/%s", a.Verb, a.Group, a.Namespace, a.Name)
	for _, ok := range g.allowed {
		if ok == right && a.Resource == "serviceaccounts" {
			return &authorizationv1.SubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}}, nil
		}
	}
	return &authorizationv1.SubjectAccessReview{}, nil
}

// asked lists the rights asked about, as grants lists them.
func (g *grants) rights() []string {
	var out []string
	for _, s := range g.asked {
		a := s.ResourceAttributes
		out = append(out, fmt.Sprintf("%s %s %s/%s", a.Verb, a.Group, a.Namespace, a.Name))
	}
	return out
}

// controllerNaming is a controller resource of kind in namespace ns (none: cluster-scoped)
// acting as account: "" names none, "NAME" or "NAMESPACE/NAME" one.
func controllerNaming(kind, ns, account, source string) map[string]any {
	spec := map[string]any{
		"parentResource": map[string]any{"apiVersion": "v1", "resource": "configmaps"},
		"childResources": []any{map[string]any{"apiVersion": "v1", "resource": "secrets"}},
		"hooks":          map[string]any{"sync": map[string]any{"starlark": map[string]any{"source": source}}},
	}
	if account != "" {
		sa := map[string]any{"name": account}
		if n, name, ok := strings.Cut(account, "/"); ok {
			sa = map[string]any{"namespace": n, "name": name}
		}
		spec["serviceAccount"] = sa
	}
	meta := map[string]any{"name": "c"}
	if ns != "" {
		meta["namespace"] = ns
	}
	return map[string]any{"apiVersion": "metascript.dev/v1alpha1", "kind": kind, "metadata": meta, "spec": spec}
}

const syncSource = "def sync(request):\n    return {}\n"

// TestAccountProblems: which writes are checked, which account each is checked for, with
// which rights, and what a refusal says.
func TestAccountProblems(t *testing.T) {
	alice := authenticationv1.UserInfo{Username: "alice", UID: "u-1", Groups: []string{"team-a-devs", "system:authenticated"},
		Extra: map[string]authenticationv1.ExtraValue{"scopes": {"x"}}}
	const ncc, cc = "NamespacedCompositeController", "CompositeController"
	use := func(ns, name string) string { return "use metascript.dev " + ns + "/" + name }
	impersonate := func(ns, name string) string { return "impersonate  " + ns + "/" + name }
	for _, tc := range []struct {
		name     string
		op       admissionv1.Operation
		old, obj map[string]any
		allowed  []string
		asked    []string // the rights asked about, in order
		refusal  string   // "" allowed
	}{
		{"create, no right", admissionv1.Create, nil, controllerNaming(ncc, "team-a", "powerful", syncSource), nil,
			[]string{use("team-a", "powerful"), impersonate("team-a", "powerful")},
			`spec.serviceAccount: user "alice" may not act as ServiceAccount team-a/powerful: it needs "use" on serviceaccounts.metascript.dev ` +
				`(or "impersonate" on serviceaccounts) for that account in namespace team-a`},
		{"create, use", admissionv1.Create, nil, controllerNaming(ncc, "team-a", "powerful", syncSource),
			[]string{use("team-a", "powerful")}, []string{use("team-a", "powerful")}, ""},
		{"create, impersonate", admissionv1.Create, nil, controllerNaming(ncc, "team-a", "powerful", syncSource),
			[]string{impersonate("team-a", "powerful")}, []string{use("team-a", "powerful"), impersonate("team-a", "powerful")}, ""},
		{"create, use on another account", admissionv1.Create, nil, controllerNaming(ncc, "team-a", "powerful", syncSource),
			[]string{use("team-a", "default"), use("team-b", "powerful")}, []string{use("team-a", "powerful"), impersonate("team-a", "powerful")},
			"may not act as ServiceAccount team-a/powerful"},
		{"create, the namespace's default account", admissionv1.Create, nil, controllerNaming(ncc, "team-a", "", syncSource), nil,
			[]string{use("team-a", "default"), impersonate("team-a", "default")},
			`user "alice" may not act as ServiceAccount team-a/default (its namespace's default account: spec.serviceAccount is not set)`},
		{"update, the account unchanged", admissionv1.Update, controllerNaming(ncc, "team-a", "powerful", syncSource),
			controllerNaming(ncc, "team-a", "powerful", syncSource+"# edited\n"), nil, nil, ""},
		{"update, the default named", admissionv1.Update, controllerNaming(ncc, "team-a", "", syncSource),
			controllerNaming(ncc, "team-a", "default", syncSource), nil, nil, ""},
		{"update, another account", admissionv1.Update, controllerNaming(ncc, "team-a", "powerful", syncSource),
			controllerNaming(ncc, "team-a", "other", syncSource), []string{use("team-a", "powerful")},
			[]string{use("team-a", "other"), impersonate("team-a", "other")}, "may not act as ServiceAccount team-a/other"},
		{"update, back to the default implicitly", admissionv1.Update, controllerNaming(ncc, "team-a", "powerful", syncSource),
			controllerNaming(ncc, "team-a", "", syncSource), []string{use("team-a", "powerful")},
			[]string{use("team-a", "default"), impersonate("team-a", "default")}, "team-a/default (its namespace's default account"},
		{"update of an object whose old version does not decode", admissionv1.Update, map[string]any{"spec": "x"},
			controllerNaming(ncc, "team-a", "powerful", syncSource), []string{use("team-a", "powerful")}, []string{use("team-a", "powerful")}, ""},
		{"cluster-scoped, the engine's account", admissionv1.Create, nil, controllerNaming(cc, "", "", syncSource), nil, nil, ""},
		{"cluster-scoped, an account", admissionv1.Create, nil, controllerNaming(cc, "", "ops/deployer", syncSource), nil,
			[]string{use("ops", "deployer"), impersonate("ops", "deployer")}, "may not act as ServiceAccount ops/deployer: "},
		{"an account the engine refuses anyway", admissionv1.Create, nil, controllerNaming(ncc, "team-a", "team-b/x", syncSource), nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &grants{allowed: tc.allowed}
			got := problemsText(accountProblems(context.Background(), g, kinds.Lookup(fmt.Sprint(tc.obj["kind"])), request(t, tc.op, alice, tc.old, tc.obj), tc.obj))
			if tc.refusal == "" && got != "" || tc.refusal != "" && !strings.Contains(got, tc.refusal) {
				t.Errorf("problems %q, want %q", got, tc.refusal)
			}
			if strings.Join(g.rights(), "; ") != strings.Join(tc.asked, "; ") {
				t.Errorf("asked about %q, want %q", g.rights(), tc.asked)
			}
			for _, s := range g.asked {
				if s.User != "alice" || s.UID != "u-1" || strings.Join(s.Groups, ",") != "team-a-devs,system:authenticated" ||
					fmt.Sprint(s.Extra) != "map[scopes:[x]]" || s.ResourceAttributes.Resource != "serviceaccounts" {
					t.Errorf("review of %+v, want alice's user, uid, groups and extra on serviceaccounts", s)
				}
			}
		})
	}
	g := &grants{err: errors.New("connection refused")}
	obj := controllerNaming(ncc, "team-a", "powerful", syncSource)
	got := problemsText(accountProblems(context.Background(), g, kinds.Lookup(ncc), request(t, admissionv1.Create, alice, nil, obj), obj))
	if want := `spec.serviceAccount: checking whether "alice" may act as ServiceAccount team-a/powerful: connection refused`; got != want {
		t.Errorf("a review that fails: %q, want %q", got, want)
	}
}

func problemsText(ps []Problem) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Error())
	}
	return strings.Join(out, "; ")
}

func request(t *testing.T, op admissionv1.Operation, user authenticationv1.UserInfo, old, obj map[string]any) *admissionv1.AdmissionRequest {
	t.Helper()
	raw := func(v map[string]any) []byte {
		if v == nil {
			return nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	meta := obj["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	return &admissionv1.AdmissionRequest{Operation: op, Name: "c", Namespace: ns, UserInfo: user,
		Object: runtime.RawExtension{Raw: raw(obj)}, OldObject: runtime.RawExtension{Raw: raw(old)}}
}
