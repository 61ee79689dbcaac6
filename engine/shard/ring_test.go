package shard

import (
	"fmt"
	"math"
	"testing"
)

func keys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("compositecontroller/web|apps.example.com|team-%d/site-%d", i%7, i)
	}
	return out
}

func TestRingSharesAreNearEven(t *testing.T) {
	for _, members := range [][]string{
		{"engine-a"},
		{"engine-a", "engine-b"},
		{"metascript-7f9c-x2k4p", "metascript-7f9c-q8z1m", "metascript-7f9c-l0v3n"},
		{"m1", "m2", "m3", "m4", "m5"},
	} {
		r := NewRing(members)
		even := 1 / float64(len(members))
		var sum float64
		for _, m := range members {
			s := r.Share(m)
			sum += s
			if math.Abs(s-even) > 0.25*even {
				t.Errorf("%v: %s owns %.3f of the circle, want %.3f ± 25%%", members, m, s, even)
			}
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("%v: shares sum to %v", members, sum)
		}
		counts := map[string]int{}
		for _, k := range keys(3000) {
			counts[r.Owner(k)]++
		}
		for _, m := range members {
			if got, want := float64(counts[m]), 3000*even; math.Abs(got-want) > 0.25*want {
				t.Errorf("%v: %s owns %v of 3000 keys, want %v ± 25%%", members, m, got, want)
			}
		}
	}
}

// A member joining takes keys only for itself; one leaving gives away only its own.
func TestRingMovesOnlyTheChangingMembersShare(t *testing.T) {
	before := NewRing([]string{"a", "b", "c"})
	joined := NewRing([]string{"a", "b", "c", "d"})
	left := NewRing([]string{"a", "c"})
	moved := 0
	for _, k := range keys(3000) {
		was := before.Owner(k)
		if now := joined.Owner(k); now != was {
			moved++
			if now != "d" {
				t.Fatalf("%s moved from %s to %s when d joined", k, was, now)
			}
		}
		if now := left.Owner(k); now != was && was != "b" {
			t.Fatalf("%s moved from %s to %s when b left", k, was, now)
		}
	}
	if moved < 3000/4/2 || moved > 3000/4*3/2 {
		t.Errorf("%d of 3000 keys moved to the fourth member, want about a quarter", moved)
	}
}

func TestRingEdges(t *testing.T) {
	if got := NewRing(nil).Owner("x"); got != "" {
		t.Errorf("the empty ring owns x: %q", got)
	}
	if got := NewRing([]string{"a", "a"}).Members(); len(got) != 1 {
		t.Errorf("duplicates count once: %v", got)
	}
	if got := NewRing([]string{"solo"}).Share("solo"); got != 1 {
		t.Errorf("one member owns %v of the circle", got)
	}
}
