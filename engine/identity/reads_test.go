package identity

import (
	"context"
	"errors"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestReviewerAsksOnceAndNamesTheRefusal(t *testing.T) {
	client := fake.NewClientset()
	var asked []authorizationv1.SubjectAccessReviewSpec
	client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		asked = append(asked, review.Spec)
		review.Status.Allowed = review.Spec.ResourceAttributes.Namespace == "team-a"
		if !review.Status.Allowed {
			review.Status.Reason = "no RBAC policy matched"
		}
		return true, review, nil
	})
	r := NewReviewer(client.AuthorizationV1().SubjectAccessReviews())
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	user := User("home", "writer")
	ctx := context.Background()
	for range 3 {
		if err := r.Check(ctx, Access{User: user, Verb: "list", Resource: configMaps, Namespace: "team-a"}); err != nil {
			t.Fatalf("team-a: %v", err)
		}
	}
	err := r.Check(ctx, Access{User: user, Verb: "list", Resource: configMaps, Namespace: "team-b"})
	var refused *ReadRefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("team-b: %v, want a *ReadRefusedError", err)
	}
	if want := "system:serviceaccount:home:writer may not list configmaps in namespace team-b: no RBAC policy matched"; err.Error() != want {
		t.Errorf("refusal %q, want %q", err, want)
	}
	if len(asked) != 2 {
		t.Errorf("%d reviews made, want 2: one per access, the answers reused", len(asked))
	}
	if g := strings.Join(asked[0].Groups, ","); g != "system:serviceaccounts,system:serviceaccounts:home,system:authenticated" {
		t.Errorf("review groups %q, want the ServiceAccount's", g)
	}
}

// TestReviewerChecksOneObjectByName: an access with a Name asks about that very object, its
// answer is remembered apart from the same access on another name, and the refusal names it.
func TestReviewerChecksOneObjectByName(t *testing.T) {
	client := fake.NewClientset()
	var asked []string
	client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		asked = append(asked, review.Spec.ResourceAttributes.Name)
		review.Status.Allowed = review.Spec.ResourceAttributes.Name == "public"
		return true, review, nil
	})
	r := NewReviewer(client.AuthorizationV1().SubjectAccessReviews())
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	user := User("team-a", "default")
	cases := []struct {
		name, want string
	}{
		{"public", ""},
		{"creds", `system:serviceaccount:team-a:default may not get secrets "creds" in namespace team-a`},
		{"public", ""},
		{"creds", `system:serviceaccount:team-a:default may not get secrets "creds" in namespace team-a`},
	}
	for _, c := range cases {
		err := r.Check(context.Background(), Access{User: user, Verb: "get", Resource: secrets, Namespace: "team-a", Name: c.name})
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("get secret %s: %q, want %q", c.name, got, c.want)
		}
	}
	if strings.Join(asked, ",") != "public,creds" {
		t.Errorf("reviews asked about %v, want public,creds once each", asked)
	}
}
