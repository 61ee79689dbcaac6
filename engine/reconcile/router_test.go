package reconcile

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

// selectorLabels decides which parent events reach a runner: a key it returns that a
// selected parent could lack would lose that parent's events.
func TestSelectorLabels(t *testing.T) {
	for _, tc := range []struct {
		selector string
		want     []string
	}{
		{"", nil},
		{"tenant=t1", []string{"tenant=t1"}},
		{"tenant==t1,app=web", []string{"app=web"}}, // parsed requirements are sorted by key
		{"tenant in (a,b)", []string{"tenant=a", "tenant=b"}},
		{"tenant", nil},
		{"tenant!=t1", nil},
		{"!tenant,app=web", []string{"app=web"}},
	} {
		sel, err := labels.Parse(tc.selector)
		if err != nil {
			t.Fatal(err)
		}
		got := selectorLabels(sel)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("selectorLabels(%q) = %v, want %v", tc.selector, got, tc.want)
		}
	}
	if got := selectorLabels(nil); got != nil {
		t.Errorf("selectorLabels(nil) = %v, want none", got)
	}
}
