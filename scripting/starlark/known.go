package starlark

import (
	"go.starlark.net/syntax"
)

// facts is what the rewrite can tell about the value of an expression without running it,
// so that it can leave out guards that cannot matter: an int product is not a repetition,
// a comparison with an int or a string never meets a request view, and concatenating a
// short string (the text of an int) with s allocates only s and that string.
//
// The analysis is by name over the whole file, which keeps it simple and sound: a
// built-in is trusted only if the file binds its name nowhere, and a name is a known int
// only if every binding of it anywhere in the file is a loop over range(), so every
// reference to it, in whatever scope, reads an int (or fails as unbound).
type facts struct {
	bound    map[string]bool // names the file binds anywhere
	notRange map[string]bool // names bound other than as the variable of a loop over range()
	// ints memoises knownInt of sums and products: the rewrite asks about every operand of
	// a chain a + b + c + ..., and without it a long chain costs the square of its length.
	ints  map[syntax.Expr]bool
	asked int // knownInt evaluations, which the tests keep linear in the size of the source
}

func fileFacts(f *syntax.File) *facts {
	fs := &facts{bound: map[string]bool{}, notRange: map[string]bool{}, ints: map[syntax.Expr]bool{}}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.AssignStmt:
			fs.bind(n.LHS, false)
		case *syntax.ForStmt:
			fs.bind(n.Vars, fs.isRangeCall(n.X))
		case *syntax.ForClause:
			fs.bind(n.Vars, fs.isRangeCall(n.X))
		case *syntax.DefStmt:
			fs.bind(n.Name, false)
			fs.params(n.Params)
		case *syntax.LambdaExpr:
			fs.params(n.Params)
		case *syntax.LoadStmt:
			for _, id := range n.From {
				fs.bind(id, false)
			}
			for _, id := range n.To {
				fs.bind(id, false)
			}
		}
		return true
	})
	return fs
}

// bind records the names a binding target binds; fromRange is whether the target is the
// lone variable of a loop over range().
func (fs *facts) bind(target syntax.Expr, fromRange bool) {
	switch t := target.(type) {
	case *syntax.Ident:
		fs.bound[t.Name] = true
		if !fromRange {
			fs.notRange[t.Name] = true
		}
	case *syntax.ParenExpr:
		fs.bind(t.X, false)
	case *syntax.TupleExpr:
		for _, e := range t.List {
			fs.bind(e, false)
		}
	case *syntax.ListExpr:
		for _, e := range t.List {
			fs.bind(e, false)
		}
	}
}

func (fs *facts) params(ps []syntax.Expr) {
	for _, p := range ps {
		switch p := p.(type) {
		case *syntax.BinaryExpr: // name=default
			fs.bind(p.X, false)
		case *syntax.UnaryExpr: // *args, **kwargs; a bare * has no X
			if p.X != nil {
				fs.bind(p.X, false)
			}
		default:
			fs.bind(p, false)
		}
	}
}

// builtin reports whether name certainly refers to the predeclared built-in of that name.
// It is called only once the whole file has been walked.
func (fs *facts) builtin(name string) bool { return !fs.bound[name] }

func (fs *facts) isRangeCall(e syntax.Expr) bool {
	c, ok := e.(*syntax.CallExpr)
	if !ok {
		return false
	}
	id, ok := c.Fn.(*syntax.Ident)
	// range is checked later, when the whole file has been walked (knownInt).
	return ok && id.Name == "range"
}

// callTo returns the name of the built-in e calls, or "".
func (fs *facts) callTo(e syntax.Expr) string {
	c, ok := e.(*syntax.CallExpr)
	if !ok {
		return ""
	}
	id, ok := c.Fn.(*syntax.Ident)
	if !ok || !fs.builtin(id.Name) {
		return ""
	}
	return id.Name
}

// knownInt reports whether e certainly evaluates to an int (or fails) whose size is
// bounded by the source: an int literal, a loop variable over range(), len(...), and
// sums, differences, products, quotients and remainders of those.
func (fs *facts) knownInt(e syntax.Expr) bool {
	fs.asked++
	switch e := e.(type) {
	case *syntax.Literal:
		return e.Token == syntax.INT
	case *syntax.Ident:
		return fs.bound[e.Name] && !fs.notRange[e.Name] && fs.builtin("range")
	case *syntax.ParenExpr:
		return fs.knownInt(e.X)
	case *syntax.UnaryExpr:
		return (e.Op == syntax.MINUS || e.Op == syntax.PLUS) && fs.knownInt(e.X)
	case *syntax.BinaryExpr:
		switch e.Op {
		case syntax.PLUS, syntax.MINUS, syntax.STAR, syntax.SLASHSLASH, syntax.PERCENT:
			known, ok := fs.ints[e]
			if !ok {
				known = fs.knownInt(e.X) && fs.knownInt(e.Y)
				fs.ints[e] = known
			}
			return known
		}
	case *syntax.CallExpr:
		return fs.callTo(e) == "len"
	}
	return false
}

// shortText reports whether e certainly evaluates to something no larger than its source
// text or the text of a known int: a literal, a known int, or str() of one.
func (fs *facts) shortText(e syntax.Expr) bool {
	if isPlainLiteral(e) || fs.knownInt(e) {
		return true
	}
	if p, ok := e.(*syntax.ParenExpr); ok {
		return fs.shortText(p.X)
	}
	if fs.callTo(e) == "str" {
		c := e.(*syntax.CallExpr)
		return len(c.Args) == 1 && fs.knownInt(c.Args[0])
	}
	return false
}

// scalarCalls are the built-ins whose result is never a dict, list or tuple. (hash is not
// one: the name is the stdlib module.)
var scalarCalls = map[string]bool{
	"len": true, "str": true, "repr": true, "type": true, "int": true, "float": true, "bool": true,
	"ord": true, "chr": true,
}

// scalar reports whether e certainly evaluates to a value that is neither a container nor a
// request view (or fails): then comparing it needs no guard, as go.starlark.net meets a view
// only when comparing two containers.
func (fs *facts) scalar(e syntax.Expr) bool {
	switch e := e.(type) {
	case *syntax.ParenExpr:
		return fs.scalar(e.X)
	case *syntax.UnaryExpr:
		return e.Op == syntax.NOT || fs.knownInt(e)
	case *syntax.BinaryExpr:
		if compareOps[e.Op] != "" {
			return true // a bool
		}
	case *syntax.CallExpr:
		return scalarCalls[fs.callTo(e)]
	}
	return isPlainLiteral(e) || fs.knownInt(e)
}
