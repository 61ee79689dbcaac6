package starlark

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"metascript.dev/metascript/scripting"
)

func viewsRequest() map[string]any {
	items := map[string]any{}
	for i := range 20 {
		items[fmt.Sprintf("k%02d", i)] = map[string]any{"n": int64(i)}
	}
	return map[string]any{
		"items":  items,
		"labels": map[string]any{"a": "1", "b": "2", "c": "3"},
		"list":   []any{"a", "b"},
	}
}

func TestViews(t *testing.T) {
	rt := scripting.NewRuntime(scripting.Options{}, NewCompiler())
	p := compileFixture(t, rt, "views.star")
	seen := map[string]any{}
	for i := range 20 {
		k := fmt.Sprintf("k%02d", i)
		seen[k] = k
	}
	labels := map[string]any{"a": "1", "b": "2", "c": "3"}
	withIndex := func(i string) map[string]any {
		return map[string]any{"a": "1", "b": "2", "c": "3", "index": i}
	}
	cases := []struct {
		function string
		want     any
	}{
		{"many_kids", seen},
		{"copy_in_loop", map[string]any{"copies": []any{withIndex("0"), withIndex("1"), withIndex("2")}, "original": labels}},
		{"copy_after_mutation", map[string]any{"a": "1", "b": "2", "c": "3", "added": "x"}},
		{"read_methods", map[string]any{
			"keys":        []any{"a", "b", "c"},
			"values":      []any{"1", "2", "3"},
			"items":       []any{[]any{"a", "1"}, []any{"b", "2"}, []any{"c", "3"}},
			"get":         "2",
			"get_default": "none",
			"iterate":     []any{"a", "b", "c"},
			"len":         int64(3),
		}},
		{"str_of_ints", []any{"0", "7", "1023", "1024", "-1", "1180591620717411303424", "True"}},
		{"append_cases", map[string]any{"l": []any{int64(1), int64(2)}, "view": []any{"a", "b", "c"}}},
	}
	for _, c := range cases {
		t.Run(c.function, func(t *testing.T) {
			req := viewsRequest()
			v, err := p.Call(context.Background(), scripting.Invocation{Function: c.function, Request: req})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(v, c.want) {
				t.Fatalf("got %#v\nwant %#v", v, c.want)
			}
			if !reflect.DeepEqual(req, viewsRequest()) {
				t.Fatalf("request was modified: %#v", req)
			}
		})
	}
}

// TestAppendErrors checks that list.append, which the rewrite calls directly, fails as
// Starlark's own method does.
func TestAppendErrors(t *testing.T) {
	cases := []struct{ src, msg string }{
		{"def f(r):\n    return {}.append(1)\n", "dict has no .append field or method"},
		{"def f(r):\n    return [].append(1, 2)\n", "append: got 2 arguments, want 1"},
		{"def f(r):\n    return [].append(x=1)\n", "append: unexpected keyword argument"},
		{"L = []\ndef f(r):\n    return L.append(1)\n", "append: cannot append to frozen list"},
	}
	for _, c := range cases {
		p, err := NewCompiler().Compile("append.star", c.src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Call(context.Background(), scripting.Invocation{Function: "f", Request: map[string]any{}})
		var re *scripting.RuntimeError
		if !errors.As(err, &re) || !strings.Contains(re.Msg, c.msg) {
			t.Errorf("%q: got %v, want %q", c.src, err, c.msg)
		}
	}
}

// TestViewPlacedTwice checks a request view the hook places in its result several times,
// untouched: each place holds a copy of the request's value, not the request's own, and
// the output budget counts each place as a copy, as before the copies were shared.
func TestViewPlacedTwice(t *testing.T) {
	src := "def f(r):\n    l = r[\"labels\"]\n    return {\"a\": {\"labels\": l}, \"b\": {\"labels\": l}, \"list\": [r[\"list\"], r[\"list\"]]}\n"
	p, err := NewCompiler().Compile("twice.star", src)
	if err != nil {
		t.Fatal(err)
	}
	req := viewsRequest()
	v, err := p.Call(context.Background(), scripting.Invocation{Function: "f", Request: req})
	if err != nil {
		t.Fatal(err)
	}
	labels, list := viewsRequest()["labels"], viewsRequest()["list"]
	want := map[string]any{"a": map[string]any{"labels": labels}, "b": map[string]any{"labels": labels}, "list": []any{list, list}}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got %#v\nwant %#v", v, want)
	}
	got := v.(map[string]any)["a"].(map[string]any)["labels"].(map[string]any)
	got["changed"] = "by the engine"
	if !reflect.DeepEqual(req, viewsRequest()) {
		t.Fatalf("the result shares the request's labels: %#v", req)
	}

	// Objects, one per value at each place: the result, a and b, two labels maps of 3
	// strings, the list of two lists of 2: 1+2+2*(1+3)+1+2*(1+2) = 18.
	for _, max := range []int64{17, 18} {
		_, err := p.Call(context.Background(), scripting.Invocation{Function: "f", Request: viewsRequest(),
			Budget: scripting.Budget{MaxOutputObjects: max}})
		var be *scripting.BudgetError
		if refused := errors.As(err, &be) && be.Budget == scripting.BudgetOutput; refused != (max < 18) {
			t.Errorf("MaxOutputObjects %d: err = %v", max, err)
		}
	}
}
