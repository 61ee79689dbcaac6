package starlark

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/cost"
)

// Guards are the pre-allocation checks of amplifying operations. Each estimates what the
// operation will allocate, from sizes already known, and refuses it with a BudgetError
// (maxMemory) when that would pass the invocation's memory budget (MemoryWatch.Reserve);
// otherwise it performs the operation as Starlark would.
//
// Checked before allocating: repetition (s * n, list * n, tuple * n, bytes * n, big int
// products, refused past maxIntBits, as int() refuses texts longer than maxIntText),
// % and str.format (output bounded by the format and its arguments), str.join,
// str.replace, list.extend and list += iterable, concatenation (x + y, s += t) of strings,
// bytes, lists and tuples past a small size, materialising built-ins (list, tuple, dict,
// sorted, reversed, enumerate, zip over a range or any sequence), str, repr, print and fail
// (the size of the text they render; they, % and format refuse values nested more than
// maxReprDepth levels deep, which go.starlark.net renders in time quadratic in the depth),
// and range, which is refused when it has more
// elements than the step budget allows a hook to iterate, so no built-in iterates longer
// than that either. The rewrite leaves a check out where the source shows it cannot
// matter (known.go): products of known ints, % with a known int, concatenation with a
// literal or the text of a known int.
//
// str.split, str.rsplit and str.splitlines are checked too (guard_split.go): a piece costs
// far more than the character it may come from. So is materialising the elements of a
// string or bytes (guard_iter.go): list(s.codepoints()), l.extend(b.elems()), join, ...,
// each element a new string.
//
// Comparisons, membership tests, sorted, min, max, list.index and list.remove, and dict
// keys that are not scalars (d[k], {k: v}, d.get(k), d.pop(k), d.setdefault(k)) are checked
// for the work they may do (guard_compare.go): go.starlark.net compares and hashes
// recursively, following every reference to a shared value, in one call, so a few hundred
// list slots or forty tuples can take longer than any timeout; they are refused when they
// may visit more elements than the steps the invocation has left. A key nested more than
// maxKeyDepth levels deep is refused too.
//
// Not checked before allocating, left to the allocation watchdog: comprehensions and loops
// (one step per element), other str methods (results no larger than a small constant factor
// of a string the hook already holds), stdlib results.
//
// The rewrite's other built-ins, which keep go.starlark.net's semantics for records and
// request views, are in compat.go.

func guardBuiltins() starlark.StringDict {
	d := starlark.StringDict{
		guardMul:    starlark.NewBuiltin("*", opMul),
		guardMod:    starlark.NewBuiltin("%", opMod),
		guardAddIn:  starlark.NewBuiltin("+=", opAddInPlace),
		guardAddArg: starlark.NewBuiltin("+=", opAddArg),
		guardAdd:    starlark.NewBuiltin("+", opAdd),
		recordMaker: starlark.NewBuiltin("dict", makeRecord),
		guardPipeIn: starlark.NewBuiltin("|=", opPipeInPlace),
		guardKeyArg: starlark.NewBuiltin("key", guardKey),
	}
	d["method.join"] = starlark.NewBuiltin("join", methodJoin)
	d["method.replace"] = starlark.NewBuiltin("replace", methodReplace)
	d["method.format"] = starlark.NewBuiltin("format", methodFormat)
	d["method.extend"] = starlark.NewBuiltin("extend", methodExtend)
	for _, name := range []string{"split", "rsplit", "splitlines"} {
		d["method."+name] = starlark.NewBuiltin(name, methodSplitting(name))
	}

	d["method.append"] = starlark.NewBuiltin("append", methodAppend)
	d["method.index"] = starlark.NewBuiltin("index", methodRealisingArgs("index"))
	d["method.remove"] = starlark.NewBuiltin("remove", methodRealisingArgs("remove"))
	for op, name := range compareOps {
		d[name] = starlark.NewBuiltin(op.String(), opCompare(op))
	}

	d["range"] = starlark.NewBuiltin("range", guardedRange)
	d["int"] = starlark.NewBuiltin("int", guardedInt)
	for name, per := range map[string]int64{
		"list": cost.Element, "tuple": cost.Element, "sorted": cost.Element, "reversed": cost.Element,
		"enumerate": 64, "zip": 64, "dict": 96,
	} {
		d[name] = materialising(name, per)
	}
	for _, name := range []string{"str", "repr", "print", "fail"} {
		d[name] = rendering(name)
	}
	for _, name := range []string{"sorted", "min", "max"} {
		b, ok := d[name].(*starlark.Builtin)
		if !ok {
			b = starlark.Universe[name].(*starlark.Builtin)
		}
		d[name] = ordering(b)
	}
	return d
}

var predeclared = sync.OnceValue(func() starlark.StringDict {
	d := guardBuiltins()
	for name, m := range stdlibModules() {
		d[name] = m
	}
	return d
})

func isPredeclared(name string) bool {
	_, ok := predeclared()[name]
	return ok
}

func callMethod(t *starlark.Thread, recv starlark.Value, name string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	ha, ok := recv.(starlark.HasAttrs)
	if !ok {
		return nil, fmt.Errorf("%s has no .%s field or method", recv.Type(), name)
	}
	m, err := ha.Attr(name)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("%s has no .%s field or method", recv.Type(), name)
	}
	return starlark.Call(t, m, args, kwargs)
}

func opMul(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, y := args[0], args[1]
	seq, count := x, y
	if _, ok := x.(starlark.Int); ok {
		if yi, ok := y.(starlark.Int); ok {
			xi := x.(starlark.Int)
			if _, small := xi.Int64(); !small {
				if _, small := yi.Int64(); !small {
					bits := int64(xi.BigInt().BitLen() + yi.BigInt().BitLen())
					if bits > maxIntBits {
						return nil, fmt.Errorf("int product of about %d bits is larger than the limit of %d bits", bits, maxIntBits)
					}
					if err := stateOf(t).reserve(bits / 8); err != nil {
						return nil, err
					}
				}
			}
			return starlark.Binary(syntax.STAR, x, y)
		}
		seq, count = y, x
	}
	if n, ok := count.(starlark.Int); ok {
		var per int64
		switch seq.(type) {
		case starlark.String, starlark.Bytes:
			per = 1
		case *starlark.List, starlark.Tuple, *listView:
			per = cost.Element
		}
		if per > 0 {
			k, ok := n.Int64()
			if !ok {
				k = math.MaxInt64
			}
			if k > 0 {
				size := cost.Mul(cost.Mul(int64(starlark.Len(seq)), per), k)
				if err := stateOf(t).reserve(size); err != nil {
					return nil, err
				}
			}
		}
	}
	return starlark.Binary(syntax.STAR, x, y)
}

func opMod(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, y := args[0], args[1]
	if f, ok := x.(starlark.String); ok {
		limit := stateOf(t).budget().MaxMemory
		var size int64
		switch y := y.(type) {
		case starlark.Tuple:
			for _, a := range y {
				n, err := reprSize(a, limit)
				if err != nil {
					return nil, fmt.Errorf("%%: %w", err)
				}
				size = cost.Add(size, n)
			}
		default:
			n, err := reprSize(y, limit)
			if err != nil {
				return nil, fmt.Errorf("%%: %w", err)
			}
			size = n
			if _, ok := y.(starlark.Mapping); ok {
				// %(key)s may name one value many times.
				size = cost.Mul(int64(strings.Count(string(f), "%")), n)
			}
		}
		if err := stateOf(t).reserve(cost.Add(size, int64(len(f)))); err != nil {
			return nil, err
		}
	}
	return starlark.Binary(syntax.PERCENT, x, y)
}

// opAdd checks the size of a concatenation before it allocates: without it a doubling
// loop (s = s + s) allocates as much again as it holds in one step, past the watchdog.
func opAdd(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, y := args[0], args[1]
	if err := checkConcat(t, x, y); err != nil {
		return nil, err
	}
	return starlark.Binary(syntax.PLUS, x, y)
}

// checkConcat reserves the size of x + y when they are strings, bytes, lists or tuples
// past scripting.SmallAlloc.
func checkConcat(t *starlark.Thread, x, y starlark.Value) error {
	var n int64
	switch xv := x.(type) {
	case starlark.String:
		if yv, ok := y.(starlark.String); ok {
			n = int64(len(xv)) + int64(len(yv))
		}
	case starlark.Bytes:
		if yv, ok := y.(starlark.Bytes); ok {
			n = int64(len(xv)) + int64(len(yv))
		}
	case *starlark.List, starlark.Tuple, *listView:
		n = cost.Mul(int64(max(starlark.Len(x), 0)+max(starlark.Len(y), 0)), cost.Element)
	}
	if n > scripting.SmallAlloc {
		return stateOf(t).reserve(n)
	}
	return nil
}

func opAddInPlace(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, y := args[0], args[1]
	l, ok := x.(*starlark.List)
	if v, isView := x.(*listView); isView {
		l, ok = v.private(), true
	}
	if !ok {
		// s += y concatenates, as s = s + y does.
		if err := checkConcat(t, x, y); err != nil {
			return nil, err
		}
		return starlark.Binary(syntax.PLUS, x, y)
	}
	// list += iterable extends the list in place, as Starlark does.
	if _, ok := y.(starlark.Iterable); !ok {
		return nil, fmt.Errorf("unknown binary op: list += %s", y.Type())
	}
	n, per := iterLen(y)
	if err := stateOf(t).reserve(cost.Mul(int64(max(n, 0)), per)); err != nil {
		return nil, err
	}
	elems := make([]starlark.Value, 0, max(n, 0))
	it := starlark.Iterate(y)
	var v starlark.Value
	for it.Next(&v) {
		elems = append(elems, v)
	}
	it.Done()
	for _, v := range elems {
		if err := l.Append(v); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func opAddArg(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	if n := starlark.Len(args[0]); n > 0 {
		if err := stateOf(t).reserve(cost.Mul(int64(n), cost.Element)); err != nil {
			return nil, err
		}
	}
	return args[0], nil
}

func methodJoin(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	recv, rest := args[0], args[1:]
	if sep, ok := recv.(starlark.String); ok && len(rest) == 1 {
		if n, per := iterLen(rest[0]); n > 1 && per == perTextElem {
			// The elements or code points of a string of n bytes: at most n pieces of n
			// bytes in all, each piece a new string, written to a growing buffer.
			size := cost.Add(cost.Mul(int64(len(sep)), int64(n-1)), int64(n))
			if err := stateOf(t).reserve(cost.Add(cost.Mul(size, 2), cost.Mul(int64(n), 16))); err != nil {
				return nil, err
			}
		} else if seq, ok := rest[0].(starlark.Indexable); ok && seq.Len() > 1 {
			n := seq.Len()
			size := cost.Mul(int64(len(sep)), int64(n-1))
			for i := 0; i < n; i++ {
				if s, ok := seq.Index(i).(starlark.String); ok {
					size = cost.Add(size, int64(len(s)))
				}
			}
			if err := stateOf(t).reserve(size); err != nil {
				return nil, err
			}
		}
	}
	return callMethod(t, recv, "join", rest, kwargs)
}

func methodReplace(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	recv, rest := args[0], args[1:]
	if s, ok := recv.(starlark.String); ok && len(rest) >= 2 {
		old, ok1 := rest[0].(starlark.String)
		nw, ok2 := rest[1].(starlark.String)
		if ok1 && ok2 && len(nw) > len(old) {
			var n int64
			if old == "" {
				n = int64(utf8.RuneCountInString(string(s))) + 1
			} else {
				n = int64(strings.Count(string(s), string(old)))
			}
			if len(rest) >= 3 {
				if c, ok := rest[2].(starlark.Int); ok {
					if c64, ok := c.Int64(); ok && c64 >= 0 && c64 < n {
						n = c64
					}
				}
			}
			size := cost.Add(int64(len(s)), cost.Mul(n, int64(len(nw)-len(old))))
			if err := stateOf(t).reserve(size); err != nil {
				return nil, err
			}
		}
	}
	return callMethod(t, recv, "replace", rest, kwargs)
}

func methodFormat(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	recv, rest := args[0], args[1:]
	if f, ok := recv.(starlark.String); ok && (len(rest) > 0 || len(kwargs) > 0) {
		limit := stateOf(t).budget().MaxMemory
		var largest, sum int64
		var deep error
		note := func(v starlark.Value) {
			n, err := reprSize(v, limit)
			deep = cmp.Or(deep, err)
			largest = max(largest, n)
			sum = cost.Add(sum, n)
		}
		for _, a := range rest {
			note(a)
		}
		for _, kv := range kwargs {
			note(kv[1])
		}
		if deep != nil {
			return nil, fmt.Errorf("format: %w", deep)
		}
		// Automatic fields ({}) use each argument once; named or numbered ones may repeat.
		size := sum
		if fields := int64(strings.Count(string(f), "{")); fields > 0 && strings.Count(string(f), "{}") < int(fields) {
			size = cost.Mul(fields, largest)
		}
		if err := stateOf(t).reserve(cost.Add(size, int64(len(f)))); err != nil {
			return nil, err
		}
	}
	return callMethod(t, recv, "format", rest, kwargs)
}

func methodExtend(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	recv, rest := args[0], args[1:]
	if len(rest) == 1 {
		if n, per := iterLen(rest[0]); n > 0 {
			if err := stateOf(t).reserve(cost.Mul(int64(n), per)); err != nil {
				return nil, err
			}
		}
	}
	return callMethod(t, recv, "extend", rest, kwargs)
}

// maxIntBits bounds the ints a hook can make by multiplying or parsing. go.starlark.net's big
// ints cost time that grows faster than their size in one uninterruptible call (parsing a
// million decimal digits took seconds and gigabytes, printing or dividing ints of a few
// megabytes hundreds of milliseconds), and no result can hold an int wider than 64 bits.
// Ints grow past it only by repeated shifts or sums, a step at a time, which the allocation
// watchdog bounds.
const maxIntBits = 1 << 16

// maxIntText bounds the length of the text int() parses: maxIntBits in decimal, with room
// for a sign, a prefix and underscores.
const maxIntText = 20000

var universeInt = starlark.Universe["int"].(*starlark.Builtin)

func guardedInt(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) > 0 {
		if s, ok := args[0].(starlark.String); ok && len(s) > maxIntText {
			return nil, fmt.Errorf("int: text of %d characters is longer than the limit of %d", len(s), maxIntText)
		}
	}
	return universeInt.CallInternal(t, args, kwargs)
}

var universeRange = starlark.Universe["range"].(*starlark.Builtin)

func guardedRange(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	v, err := universeRange.CallInternal(t, args, kwargs)
	if err != nil {
		return nil, err
	}
	cs := stateOf(t)
	if n := uint64(starlark.Len(v)); n > cs.budget().MaxSteps {
		return nil, cs.refuse(cs.watch.Exceeded(scripting.BudgetSteps, int64(n), nil))
	}
	return v, nil
}

// materialising wraps a built-in that builds a collection from its iterable arguments.
func materialising(name string, per int64) *starlark.Builtin {
	orig := starlark.Universe[name].(*starlark.Builtin)
	return starlark.NewBuiltin(name, func(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var size int64
		for _, a := range args {
			if n, perText := iterLen(a); n > 0 {
				size = cost.Add(size, cost.Mul(int64(n), max(per, perText)))
			}
		}
		if err := stateOf(t).reserve(size); err != nil {
			return nil, err
		}
		if name == "dict" && len(args) == 1 && len(kwargs) == 0 {
			// dict(view), dict(record): copy directly, without item tuples; a record
			// when it has few entries.
			switch v := args[0].(type) {
			case *mapView:
				if v.own == nil {
					if len(v.src) <= recordMax {
						keys, vals := v.entries()
						return recordOf(keys, vals), nil
					}
					return v.copyDict(), nil
				}
			case *record:
				if v.own == nil {
					return recordOf(v.keys, v.vals), nil
				}
			}
		}
		return orig.CallInternal(t, args, kwargs)
	})
}

// smallIntText holds str(i) for the small non-negative ints hooks turn into names and
// labels (indices, replica counts), made once: str(i) then allocates nothing.
var smallIntText = func() (t [1024]starlark.Value) {
	for i := range t {
		t[i] = starlark.String(strconv.Itoa(i))
	}
	return t
}()

// rendering wraps a built-in that renders its arguments as text.
func rendering(name string) *starlark.Builtin {
	orig := starlark.Universe[name].(*starlark.Builtin)
	return starlark.NewBuiltin(name, func(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if name == "str" && len(args) == 1 && len(kwargs) == 0 {
			if i, ok := args[0].(starlark.Int); ok {
				if i, ok := i.Int64(); ok && i >= 0 && i < int64(len(smallIntText)) {
					return smallIntText[i], nil
				}
			}
		}
		cs := stateOf(t)
		var size int64
		for _, a := range args {
			n, err := reprSize(a, cs.budget().MaxMemory)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			size = cost.Add(size, n)
		}
		if err := cs.reserve(size); err != nil {
			return nil, err
		}
		return orig.CallInternal(t, args, kwargs)
	})
}
