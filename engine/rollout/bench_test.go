package rollout

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/apis/v1alpha1"
)

// BenchmarkCandidate is what a staged rollout adds to every reconcile: the question which
// revision the parent runs.
func BenchmarkCandidate(b *testing.B) {
	r := Start(PolicyOf(&v1alpha1.HookRolloutPolicy{}), "stable", []byte(`{}`), "candidate", nil)
	parents := make([]Parent, 10_000)
	for i := range parents {
		parents[i] = Parent{UID: types.UID(fmt.Sprintf("6d1c0a4e-0000-4000-8000-%012d", i)), Name: fmt.Sprintf("ns/p%d", i)}
	}
	if _, _, err := r.Advance(time.Now(), parents); err != nil {
		b.Fatal(err)
	}
	r.Commit()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r.Candidate(parents[i%len(parents)].UID)
	}
}

// BenchmarkAdvance is one tick of the rollout's driver over 10,000 parents.
func BenchmarkAdvance(b *testing.B) {
	r := Start(PolicyOf(&v1alpha1.HookRolloutPolicy{}), "stable", []byte(`{}`), "candidate", nil)
	parents := make([]Parent, 10_000)
	for i := range parents {
		parents[i] = Parent{UID: types.UID(fmt.Sprintf("6d1c0a4e-0000-4000-8000-%012d", i)), Name: fmt.Sprintf("ns/p%d", i)}
	}
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, _, err := r.Advance(now, parents); err != nil {
			b.Fatal(err)
		}
	}
}
