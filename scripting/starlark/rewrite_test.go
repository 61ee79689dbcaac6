package starlark

import (
	"reflect"
	"strings"
	"testing"

	"go.starlark.net/syntax"
)

// guardsIn rewrites src and returns the guard calls it holds, in source order.
func guardsIn(t *testing.T, src string) []string {
	t.Helper()
	opts := fileOptions
	f, err := opts.Parse("t.star", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := rewrite(f); err != nil {
		t.Fatal(err)
	}
	var got []string
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok {
			if id, ok := c.Fn.(*syntax.Ident); ok && (strings.HasPrefix(id.Name, "operator") || strings.HasPrefix(id.Name, "method.") || id.Name == guardKeyArg+"#g") {
				got = append(got, strings.TrimSuffix(id.Name, "#g"))
			}
		}
		return true
	})
	return got
}

func TestRewriteGuards(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"range index text", "def f(n, s):\n    for i in range(n):\n        s = s + '-' + str(i)\n", nil},
		{"index rebound", "def f(n, s):\n    for i in range(n):\n        i = s\n        s = s + str(i)\n", []string{"operator+"}},
		{"index from a list", "def f(l, s):\n    for i in l:\n        s = s + str(i)\n", []string{"operator+"}},
		{"index a parameter elsewhere", "def g(i):\n    return i\ndef f(n, s):\n    for i in range(n):\n        s = s + str(i)\n", []string{"operator+"}},
		{"range shadowed", "range = lambda n: ['x' * 1000000]\ndef f(n, s):\n    for i in range(n):\n        s = s + str(i)\n", []string{"operator*", "operator+"}},
		{"str shadowed", "def str(x):\n    return x\ndef f(n, s):\n    for i in range(n):\n        s = s + str(i)\n", []string{"operator+"}},
		{"comprehension index", "def f(n):\n    return [i * 2 for i in range(n)]\n", nil},
		{"int products", "def f(l):\n    return len(l) * 3 + (len(l) - 1) * 2\n", nil},
		{"repetition", "def f(l, n):\n    return l * n\n", []string{"operator*"}},
		{"repetition by a known int", "def f(l):\n    return l * len(l)\n", []string{"operator*"}},
		{"concatenation", "def f(a, b):\n    return a + b\n", []string{"operator+"}},
		{"concatenation with a literal", "def f(a):\n    return a + 'x'\n", nil},
		{"compare containers", "def f(a, b):\n    return a == b or a in b\n", []string{"operator==", "operator in"}},
		{"compare scalars", "def f(a, b):\n    return len(a) == len(b) or str(a) < b or type(a) == type(b) or (a == 1) == b\n", nil},
		{"not is scalar", "def f(a, b):\n    return (not a) == b\n", nil},
		{"format with a known int", "def f(s, l):\n    return s % len(l)\n", nil},
		{"format", "def f(s, a):\n    return s % a\n", []string{"operator%"}},
		{"augmented short text", "def f(n):\n    s = ''\n    for i in range(n):\n        s += str(i)\n    return s\n", nil},
		{"augmented sum", "def f(s, a, b):\n    s += a + b\n    return s\n", []string{"operator+=", "operator+"}},
		{"augmented display", "def f(l, a):\n    l += [a]\n    return l\n", nil},
		{"append", "def f(l, a):\n    l.append(a)\n", []string{"method.append"}},
		{"scalar keys", "def f(d, l):\n    d['a'] = [d[len(l)], d.get(str(1), 0)]\n    return {'k': 1, 2: 3}\n", nil},
		{"keys", "def f(d, k):\n    d[k] = d.get(k)\n    d[k] += 1\n    return {k: 1}, {k: v for k, v in d.items()}, d.pop(k), d.setdefault(k)\n",
			[]string{"dict#key", "dict#key", "dict#key", "dict#key", "dict#key", "dict#key", "dict#key"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := guardsIn(t, c.src)
			if !reflect.DeepEqual(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
				t.Fatalf("guards %v, want %v", got, c.want)
			}
		})
	}
}

// TestRewriteAliasesBuiltins checks that calls of built-ins go through global aliases, and
// that a name the file binds is left alone.
func TestRewriteAliasesBuiltins(t *testing.T) {
	cases := []struct {
		src, want string
	}{
		{"def f(l):\n    return len(l)\n", "len#g"},
		{"def len(x):\n    return 0\ndef f(l):\n    return len(l)\n", "len"},
		{"def f(l, len):\n    return len(l)\n", "len"},
		{"def f(l):\n    return sorted(l)\n", "sorted#g"},
		{"def f(l):\n    return g(l)\ndef g(l):\n    return l\n", "g"},
		{"def f(l):\n    return json.encode(l)\n", "json#g"},
	}
	for _, c := range cases {
		opts := fileOptions
		f, err := opts.Parse("t.star", c.src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := rewrite(f); err != nil {
			t.Fatal(err)
		}
		var got string
		syntax.Walk(f, func(n syntax.Node) bool {
			if d, ok := n.(*syntax.DefStmt); ok && d.Name.Name == "f" {
				ret := d.Body[0].(*syntax.ReturnStmt)
				switch fn := ret.Result.(*syntax.CallExpr).Fn.(type) {
				case *syntax.Ident:
					got = fn.Name
				case *syntax.DotExpr:
					got = fn.X.(*syntax.Ident).Name
				}
			}
			return true
		})
		if got != c.want {
			t.Errorf("%q: call of %s, want %s", c.src, got, c.want)
		}
	}
}

// TestRewriteLongChainsAreLinear: the rewrite asks what is known of every operand of a long
// sum (a + b + c + ...), and without memoising that costs the square of the chain's length;
// a 100000-term sum took minutes to compile.
func TestRewriteLongChainsAreLinear(t *testing.T) {
	for _, term := range []string{" + 1", " + a", " * 2", " % 3"} {
		const n = 20000
		src := "def f(a):\n    return a" + strings.Repeat(term, n) + "\n"
		opts := fileOptions
		f, err := opts.Parse("t.star", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := &rewriter{facts: fileFacts(f), keys: map[string]*syntax.Ident{}, aliased: map[string]bool{}}
		r.stmts(f.Stmts)
		if r.facts.asked > 10*n {
			t.Errorf("%q × %d: %d knownInt evaluations, want at most %d", term, n, r.facts.asked, 10*n)
		}
	}
}
