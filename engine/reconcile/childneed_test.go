package reconcile

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"metascript.dev/metascript/engine/informers"
)

func TestOrphansOf(t *testing.T) {
	sel := func(s string) labels.Selector {
		out, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	have := informers.Orphans{Keys: []string{"tier"}}
	for _, c := range []struct {
		name  string
		sel   labels.Selector
		every bool
		keys  []string
	}{
		{"no selector: adopts none", nil, false, nil},
		{"nothing", labels.Nothing(), false, nil},
		{"one key", sel("app=web"), false, []string{"app"}},
		{"a key already read is chosen", sel("app=web,tier=front"), false, []string{"tier"}},
		{"in", sel("app in (a,b)"), false, []string{"app"}},
		{"exists", sel("app"), false, []string{"app"}},
		{"negative and positive", sel("app!=x,zone"), false, []string{"zone"}},
		{"only negative: every orphan", sel("app!=x,!zone"), true, nil},
		{"everything: every orphan", labels.Everything(), true, nil},
	} {
		got := orphansOf(c.sel, have)
		if got.Every != c.every || !slices.Equal(got.Keys, c.keys) {
			t.Errorf("%s: orphansOf = %+v, want every=%v keys=%v", c.name, got, c.every, c.keys)
		}
	}
}
