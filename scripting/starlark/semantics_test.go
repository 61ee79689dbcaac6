package starlark

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"go.starlark.net/starlark"

	"metascript.dev/metascript/scripting"
)

// TestSemanticsMatchGoStarlark runs the check_ functions of testdata/semantics.star through
// the adapter (rewritten, request views, records, guards) and through go.starlark.net alone
// (as written, request as plain dicts), and expects the same results and error messages.
func TestSemanticsMatchGoStarlark(t *testing.T) {
	src, err := os.ReadFile("testdata/semantics.star")
	if err != nil {
		t.Fatal(err)
	}
	opts := fileOptions
	plain, err := starlark.ExecFileOptions(&opts, &starlark.Thread{}, "semantics.star", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain.Freeze()
	prog, err := NewCompiler().Compile("semantics.star", string(src))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range prog.Functions() {
		if !strings.HasPrefix(name, "check_") {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			want, wantErr := starlark.Call(&starlark.Thread{}, plain[name], starlark.Tuple{fromGo(testRequest())}, nil)
			req := testRequest()
			got, gotErr := prog.Call(context.Background(), scripting.Invocation{Function: name, Request: req})
			if !reflect.DeepEqual(req, testRequest()) {
				t.Fatalf("request was modified: %#v", req)
			}
			if wantErr != nil {
				var ee *starlark.EvalError
				var re *scripting.RuntimeError
				if !errors.As(wantErr, &ee) || !errors.As(gotErr, &re) || re.Msg != ee.Msg {
					t.Fatalf("got %v, want a runtime error %q", gotErr, wantErr)
				}
				return
			}
			if gotErr != nil {
				t.Fatalf("got %v, want %s", gotErr, want)
			}
			meter := scripting.NewOutputMeter(scripting.Starlark, scripting.DefaultBudget)
			wantGo, err := toGo(want, &meter)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, wantGo) {
				t.Fatalf("got  %#v\nwant %#v", got, wantGo)
			}
		})
	}
	if n < 10 {
		t.Fatalf("only %d check_ functions found", n)
	}
}
