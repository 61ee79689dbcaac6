package identity

import (
	"context"
	"fmt"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Reviewer answers whether a user may read a resource, through SubjectAccessReviews made
// with the engine's account, remembered for ReviewTTL and at most maxReviews at a time. It
// is safe for concurrent use, and shared by every controller of the engine.
type Reviewer struct {
	reviews authorizationclient.SubjectAccessReviewInterface

	mu      sync.Mutex
	answers map[Access]review
}

// Access is one kind of read a user may or may not make: a verb on a resource, in a
// namespace or, when Namespace is empty, across the cluster; on the one object Name when it
// is set, on every object of the resource otherwise.
type Access struct {
	User, Verb string
	Resource   schema.GroupVersionResource
	Namespace  string
	Name       string
}

type review struct {
	allowed bool
	reason  string
	at      time.Time
}

// ReviewTTL is how long an answer is reused: a changed Role takes effect within it.
const ReviewTTL = 30 * time.Second

// maxReviews bounds the answers remembered; past it the expired ones, then all, are dropped.
const maxReviews = 10000

// NewReviewer returns a Reviewer asking reviews.
func NewReviewer(reviews authorizationclient.SubjectAccessReviewInterface) *Reviewer {
	return &Reviewer{reviews: reviews, answers: map[Access]review{}}
}

// ReadRefusedError is a read the account may not make: the engine hands its hooks nothing
// of it.
type ReadRefusedError struct {
	Access
	Reason string
}

func (e *ReadRefusedError) Error() string {
	where := "across the cluster"
	if e.Namespace != "" {
		where = "in namespace " + e.Namespace
	}
	res := e.Resource.Resource
	if e.Resource.Group != "" {
		res += "." + e.Resource.Group
	}
	if e.Name != "" {
		res += fmt.Sprintf(" %q", e.Name)
	}
	msg := fmt.Sprintf("%s may not %s %s %s", e.User, e.Verb, res, where)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Check returns a *ReadRefusedError when the access is not allowed, and the review's error
// when it could not be made.
func (r *Reviewer) Check(ctx context.Context, a Access) error {
	now := time.Now()
	r.mu.Lock()
	ans, ok := r.answers[a]
	r.mu.Unlock()
	if !ok || now.Sub(ans.at) > ReviewTTL {
		got, err := r.reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: a.User, Groups: groupsOf(a.User),
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: a.Namespace, Verb: a.Verb,
				Group: a.Resource.Group, Version: a.Resource.Version, Resource: a.Resource.Resource, Name: a.Name},
		}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("reviewing whether %s may %s %s: %w", a.User, a.Verb, a.Resource.Resource, err)
		}
		ans = review{allowed: got.Status.Allowed, reason: got.Status.Reason, at: now}
		r.remember(a, ans)
	}
	if !ans.allowed {
		return &ReadRefusedError{Access: a, Reason: ans.reason}
	}
	return nil
}

func (r *Reviewer) remember(a Access, ans review) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.answers) >= maxReviews {
		for k, v := range r.answers {
			if ans.at.Sub(v.at) > ReviewTTL {
				delete(r.answers, k)
			}
		}
		if len(r.answers) >= maxReviews {
			clear(r.answers)
		}
	}
	r.answers[a] = ans
}
