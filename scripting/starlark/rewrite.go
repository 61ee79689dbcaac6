package starlark

import (
	"strconv"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The rewrite routes the operations that can allocate far more than their operands hold
// through guard built-ins (guard.go), which check the size before allocating. A guard is
// left out where what is known of the operands (known.go: literals, known ints, short text,
// scalars) shows it cannot matter:
//
//	{"k": v, ...}    →  dict#record(keys, v, ...)  a record (record.go): distinct string keys, at most 8
//	x |= y           →  x = operator|=(x, y)      in place for records and views, as for dicts
//	x * y            →  operator*(x, y)           repetition; skipped when both are known ints
//	x % y            →  operator%(x, y)           formatting; skipped when an operand is a known int
//	x *= y, x %= y   →  x = operator*(x, y) ...   target a name or a side-effect-free index/field
//	x + y            →  operator+(x, y)           concatenation; skipped when an operand is short text
//	x += y           →  x = operator+=(x, y)      list += iterable, s += t; skipped when y is short
//	                                              text, a list, tuple or dict display, a
//	                                              comprehension or a difference
//	e.join(a), e.replace(a), e.format(a), e.extend(a)  →  method.join(e, a) ...
//	x == y, x < y, x in y, ...  →  operator==(x, y) ... unless an operand is a scalar (see compareOps)
//	e.index(a), e.remove(a)     →  method.index(e, a) ... (views compared as ordinary values)
//	e.append(a)                 →  method.append(e, a)  (not a guard: saves binding the method)
//	d[k], {k: v}, d.get(k), d.pop(k), d.setdefault(k)  →  d[dict#key(k)] ...  unless k is a
//	                            scalar: a tuple key is hashed recursively (guardKey)
//	len, str, json, ...         →  len#g, ...  a global bound to the built-in or module at the
//	                                           top, when the file binds the name nowhere
//
// The guard names contain characters no identifier can, so hook code can neither call nor
// shadow them. Guard calls are positioned at the operator, so errors point there.

type rewriteError struct {
	pos syntax.Position
	msg string
}

func (e *rewriteError) Error() string { return e.pos.String() + ": " + e.msg }

const (
	guardMul    = "operator*"
	guardMod    = "operator%"
	guardAddIn  = "operator+="
	guardAddArg = "operator+=arg"
	guardAdd    = "operator+"
	guardPipeIn = "operator|="
	recordMaker = "dict#record"
	guardKeyArg = "dict#key"
)

// keyMethods are the dict methods whose first argument is a key; the rewrite checks it as
// it checks d[k] (guardKey).
var keyMethods = map[string]bool{"get": true, "pop": true, "setdefault": true}

// guardedMethods are the method names rewritten into method.<name> calls.
var guardedMethods = map[string]string{
	"join": "method.join", "replace": "method.replace", "format": "method.format", "extend": "method.extend",
	"index": "method.index", "remove": "method.remove",
	"append": "method.append",
	"split":  "method.split", "rsplit": "method.rsplit", "splitlines": "method.splitlines",
}

// compareOps are rewritten into guards that replace request views by ordinary values
// before go.starlark.net compares: its dict and list comparisons assume both operands have
// the same Go type. Comparisons with a scalar (a literal, None, True, False, a known int,
// the result of str(), len(), a comparison, ...) cannot meet that case and are left alone.
var compareOps = map[syntax.Token]string{
	syntax.EQL: "operator==", syntax.NEQ: "operator!=", syntax.LT: "operator<", syntax.LE: "operator<=",
	syntax.GT: "operator>", syntax.GE: "operator>=", syntax.IN: "operator in", syntax.NOT_IN: "operator not in",
}

// isBuiltin reports whether name is predeclared (a built-in, guard or stdlib module) or a
// universal built-in function.
func isBuiltin(name string) bool {
	if _, ok := predeclared()[name]; ok {
		return true
	}
	_, ok := starlark.Universe[name].(*starlark.Builtin)
	return ok
}

func isPlainLiteral(e syntax.Expr) bool {
	switch e := e.(type) {
	case *syntax.Literal:
		return true
	case *syntax.Ident:
		return e.Name == "None" || e.Name == "True" || e.Name == "False"
	}
	return false
}

func rewrite(f *syntax.File) error {
	r := &rewriter{facts: fileFacts(f), keys: map[string]*syntax.Ident{}, aliased: map[string]bool{}}
	r.stmts(f.Stmts)
	if len(r.hoisted) > 0 {
		// The key tuples of records and the aliases of built-ins are globals assigned
		// before anything else runs, after the loads.
		n := 0
		for n < len(f.Stmts) {
			if _, ok := f.Stmts[n].(*syntax.LoadStmt); !ok {
				break
			}
			n++
		}
		f.Stmts = append(f.Stmts[:n:n], append(r.hoisted, f.Stmts[n:]...)...)
	}
	return r.err
}

type rewriter struct {
	facts   *facts
	err     error
	keys    map[string]*syntax.Ident // record key tuples by their keys, joined
	aliased map[string]bool          // built-ins given a global alias
	hoisted []syntax.Stmt            // their assignments
}

// alias returns a reference to a global bound, before anything else runs, to the
// predeclared or universal built-in name: go.starlark.net looks those up by name in a map
// on every use, and globals by index.
func (r *rewriter) alias(pos syntax.Position, name string) *syntax.Ident {
	g := name + "#g"
	if !r.aliased[name] {
		r.aliased[name] = true
		r.hoisted = append(r.hoisted, &syntax.AssignStmt{OpPos: pos, Op: syntax.EQ,
			LHS: &syntax.Ident{NamePos: pos, Name: g}, RHS: &syntax.Ident{NamePos: pos, Name: name}})
	}
	return &syntax.Ident{NamePos: pos, Name: g}
}

// call returns a call of the built-in guard at pos.
func (r *rewriter) call(guard string, pos syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	return &syntax.CallExpr{Fn: r.alias(pos, guard), Lparen: pos, Args: args, Rparen: pos}
}

// recordCall returns the call that makes a record for a dict display, or nil when the
// display is not one: empty, more than recordMax entries, or a key that is not a string
// literal or repeats (which is go.starlark.net's runtime error to report).
func (r *rewriter) recordCall(d *syntax.DictExpr) syntax.Expr {
	if len(d.List) == 0 || len(d.List) > recordMax {
		return nil
	}
	keys := make([]syntax.Expr, len(d.List))
	args := make([]syntax.Expr, 1, 1+len(d.List))
	seen := make(map[string]bool, len(d.List))
	var joined strings.Builder
	for i, e := range d.List {
		e := e.(*syntax.DictEntry)
		l, ok := e.Key.(*syntax.Literal)
		if !ok || l.Token != syntax.STRING || seen[l.Value.(string)] {
			return nil
		}
		seen[l.Value.(string)] = true
		joined.WriteString(strconv.Quote(l.Value.(string)))
		keys[i] = &syntax.Literal{Token: syntax.STRING, TokenPos: l.TokenPos, Raw: l.Raw, Value: l.Value}
		args = append(args, r.expr(e.Value))
	}
	id, ok := r.keys[joined.String()]
	if !ok {
		id = &syntax.Ident{NamePos: d.Lbrace, Name: "record#keys" + strconv.Itoa(len(r.keys))}
		r.keys[joined.String()] = id
		r.hoisted = append(r.hoisted, &syntax.AssignStmt{OpPos: d.Lbrace, Op: syntax.EQ,
			LHS: &syntax.Ident{NamePos: d.Lbrace, Name: id.Name},
			RHS: &syntax.TupleExpr{Lparen: d.Lbrace, List: keys, Rparen: d.Rbrace}})
	}
	args[0] = &syntax.Ident{NamePos: d.Lbrace, Name: id.Name}
	return &syntax.CallExpr{Fn: r.alias(d.Lbrace, recordMaker), Lparen: d.Lbrace, Args: args, Rparen: d.Rbrace}
}

func (r *rewriter) stmts(ss []syntax.Stmt) {
	for i, s := range ss {
		ss[i] = r.stmt(s)
	}
}

func (r *rewriter) stmt(s syntax.Stmt) syntax.Stmt {
	switch s := s.(type) {
	case *syntax.ExprStmt:
		s.X = r.expr(s.X)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = r.expr(s.Result)
		}
	case *syntax.IfStmt:
		s.Cond = r.expr(s.Cond)
		r.stmts(s.True)
		r.stmts(s.False)
	case *syntax.ForStmt:
		s.Vars = r.expr(s.Vars)
		s.X = r.expr(s.X)
		r.stmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = r.expr(s.Cond)
		r.stmts(s.Body)
	case *syntax.DefStmt:
		r.params(s.Params)
		r.stmts(s.Body)
	case *syntax.AssignStmt:
		return r.assign(s)
	}
	return s
}

func (r *rewriter) assign(s *syntax.AssignStmt) syntax.Stmt {
	// Decided on the source, before the operands are rewritten.
	intRHS, shortRHS, plainRHS := r.facts.knownInt(s.RHS), r.facts.shortText(s.RHS), cannotBeIterable(s.RHS)
	s.LHS = r.expr(s.LHS)
	s.RHS = r.expr(s.RHS)
	var guard string
	switch s.Op {
	case syntax.STAR_EQ:
		guard = guardMul
	case syntax.PERCENT_EQ:
		if intRHS {
			return s
		}
		guard = guardMod
	case syntax.PLUS_EQ:
		if shortRHS || plainRHS {
			return s
		}
		guard = guardAddIn
	case syntax.PIPE_EQ:
		guard = guardPipeIn
	default:
		return s
	}
	if lhs, ok := cloneSimple(s.LHS); ok {
		return &syntax.AssignStmt{OpPos: s.OpPos, Op: syntax.EQ, LHS: s.LHS,
			RHS: r.call(guard, s.OpPos, lhs, s.RHS)}
	}
	if s.Op == syntax.PIPE_EQ {
		// x[f()] |= y: updated in place by go.starlark.net when both are plain dicts.
		return s
	}
	if s.Op == syntax.PLUS_EQ {
		// x[f()] += y: the target cannot be evaluated twice; check y alone.
		s.RHS = r.call(guardAddArg, s.OpPos, s.RHS)
		return s
	}
	if r.err == nil {
		r.err = &rewriteError{pos: s.OpPos, msg: "augmented " + s.Op.String() + " on a target with calls or operators is not supported; write x = x " + s.Op.String()[:1] + " y"}
	}
	return s
}

func (r *rewriter) params(ps []syntax.Expr) {
	for i, p := range ps {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = r.expr(b.Y)
		} else {
			ps[i] = p
		}
	}
}

func (r *rewriter) exprs(es []syntax.Expr) {
	for i, e := range es {
		es[i] = r.expr(e)
	}
}

func (r *rewriter) expr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.BinaryExpr:
		// What is known of the operands is decided on the source, before they are rewritten.
		fs := r.facts
		var guard string
		switch {
		case compareOps[e.Op] != "":
			if !fs.scalar(e.X) && !fs.scalar(e.Y) {
				guard = compareOps[e.Op]
			}
		case e.Op == syntax.STAR:
			if !fs.knownInt(e.X) || !fs.knownInt(e.Y) {
				guard = guardMul
			}
		case e.Op == syntax.PLUS:
			if !fs.shortText(e.X) && !fs.shortText(e.Y) {
				guard = guardAdd
			}
		case e.Op == syntax.PERCENT:
			if !fs.knownInt(e.X) && !fs.knownInt(e.Y) {
				guard = guardMod
			}
		}
		e.X = r.expr(e.X)
		e.Y = r.expr(e.Y)
		if guard != "" {
			return r.call(guard, e.OpPos, e.X, e.Y)
		}
	case *syntax.UnaryExpr:
		if e.X != nil {
			e.X = r.expr(e.X)
		}
	case *syntax.ParenExpr:
		e.X = r.expr(e.X)
	case *syntax.CallExpr:
		dot, isMethod := e.Fn.(*syntax.DotExpr)
		for i, a := range e.Args {
			if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ { // keyword argument
				b.Y = r.expr(b.Y)
			} else if i == 0 && isMethod && keyMethods[dot.Name.Name] {
				e.Args[i] = r.key(a)
			} else {
				e.Args[i] = r.expr(a)
			}
		}
		if isMethod {
			if guard, ok := guardedMethods[dot.Name.Name]; ok {
				recv := r.expr(dot.X)
				return &syntax.CallExpr{Fn: r.alias(dot.Dot, guard), Lparen: e.Lparen,
					Args: append([]syntax.Expr{recv}, e.Args...), Rparen: e.Rparen}
			}
		}
		e.Fn = r.expr(e.Fn)
	case *syntax.Ident:
		// A name the file binds nowhere that names a built-in or a stdlib module.
		if r.facts.builtin(e.Name) && isBuiltin(e.Name) {
			return r.alias(e.NamePos, e.Name)
		}
	case *syntax.DotExpr:
		e.X = r.expr(e.X)
	case *syntax.IndexExpr:
		e.X = r.expr(e.X)
		e.Y = r.key(e.Y)
	case *syntax.SliceExpr:
		e.X = r.expr(e.X)
		for _, p := range []*syntax.Expr{&e.Lo, &e.Hi, &e.Step} {
			if *p != nil {
				*p = r.expr(*p)
			}
		}
	case *syntax.ListExpr:
		r.exprs(e.List)
	case *syntax.TupleExpr:
		r.exprs(e.List)
	case *syntax.DictExpr:
		if c := r.recordCall(e); c != nil {
			return c
		}
		for _, d := range e.List {
			d := d.(*syntax.DictEntry)
			d.Key = r.key(d.Key)
			d.Value = r.expr(d.Value)
		}
	case *syntax.DictEntry:
		e.Key = r.key(e.Key)
		e.Value = r.expr(e.Value)
	case *syntax.Comprehension:
		e.Body = r.expr(e.Body)
		for _, c := range e.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				c.Vars = r.expr(c.Vars)
				c.X = r.expr(c.X)
			case *syntax.IfClause:
				c.Cond = r.expr(c.Cond)
			}
		}
	case *syntax.CondExpr:
		e.Cond = r.expr(e.Cond)
		e.True = r.expr(e.True)
		e.False = r.expr(e.False)
	case *syntax.LambdaExpr:
		r.params(e.Params)
		e.Body = r.expr(e.Body)
	}
	return e
}

// key rewrites e, used as a dict key, into a call of the key check unless it is a scalar.
func (r *rewriter) key(e syntax.Expr) syntax.Expr {
	scalar := r.facts.scalar(e) // decided on the source
	pos, _ := e.Span()
	e = r.expr(e)
	if scalar {
		return e
	}
	return r.call(guardKeyArg, pos, e)
}

// cannotBeIterable reports whether e certainly evaluates to something neither `list += e`
// nor `s += e` can amplify: a literal, a list, tuple or dict display, a comprehension (each
// no larger than what it lists), or a difference (a number or a set). A sum is left out:
// s += a + b concatenates s with something as large as a and b together.
func cannotBeIterable(e syntax.Expr) bool {
	switch e := e.(type) {
	case *syntax.Literal, *syntax.ListExpr, *syntax.TupleExpr, *syntax.DictExpr, *syntax.Comprehension:
		return true
	case *syntax.BinaryExpr:
		return e.Op == syntax.MINUS
	case *syntax.ParenExpr:
		return cannotBeIterable(e.X)
	}
	return false
}

// cloneSimple returns a fresh copy of a target that can be evaluated twice without effect: a
// name, or an index or field of a simple target with a name or literal index.
func cloneSimple(e syntax.Expr) (syntax.Expr, bool) {
	switch e := e.(type) {
	case *syntax.Ident:
		return &syntax.Ident{NamePos: e.NamePos, Name: e.Name}, true
	case *syntax.Literal:
		cp := *e
		return &cp, true
	case *syntax.DotExpr:
		x, ok := cloneSimple(e.X)
		if !ok {
			return nil, false
		}
		return &syntax.DotExpr{X: x, Dot: e.Dot, NamePos: e.NamePos, Name: &syntax.Ident{NamePos: e.Name.NamePos, Name: e.Name.Name}}, true
	case *syntax.IndexExpr:
		x, ok := cloneSimple(e.X)
		if !ok {
			return nil, false
		}
		y, ok := cloneSimple(e.Y)
		if !ok {
			return nil, false
		}
		return &syntax.IndexExpr{X: x, Lbrack: e.Lbrack, Y: y, Rbrack: e.Rbrack}, true
	case *syntax.CallExpr:
		// The key check around a simple index (d[k] += 1): it only inspects its argument.
		if fn, ok := e.Fn.(*syntax.Ident); ok && fn.Name == guardKeyArg+"#g" && len(e.Args) == 1 {
			arg, ok := cloneSimple(e.Args[0])
			if !ok {
				return nil, false
			}
			return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: fn.NamePos, Name: fn.Name}, Lparen: e.Lparen, Args: []syntax.Expr{arg}, Rparen: e.Rparen}, true
		}
	}
	return nil, false
}
