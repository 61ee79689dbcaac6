package starlark

import (
	"fmt"
	"math/bits"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/scripting/internal/cost"
)

// go.starlark.net compares and hashes values recursively in one uninterruptible call, and a
// value can hold one container many times: z = [z] * 100, nine times over, is 900 list
// slots, but comparing it with a copy visits 100^9 pairs (depth is limited, to
// starlark.CompareLimit levels, breadth is not), and hashing a tuple built as t = (t, t)
// forty times visits 2^40 elements. The checks here count, before such an operation, the
// elements it may visit, following every reference as the operation does, and refuse it
// when that passes the steps the invocation has left: counting stops there, so a check
// costs no more than the operation it admits.

// maxKeyDepth bounds the nesting of a dict key: go.starlark.net hashes tuples recursively on
// the Go stack.
const maxKeyDepth = 1000

var errKeyTooDeep = fmt.Errorf("dict key nests more than %d levels deep", maxKeyDepth)

// stepsLeft is how many steps the invocation has left.
func (cs *callState) stepsLeft() int64 {
	if cs.thread.Steps >= cs.budget().MaxSteps {
		return 0
	}
	return int64(min(cs.budget().MaxSteps-cs.thread.Steps, 1<<62))
}

// refuseWork is the BudgetError of an operation that would visit n elements.
func (cs *callState) refuseWork(what string, n int64) error {
	be := cs.watch.Exceeded(scripting.BudgetSteps, int64(cs.thread.Steps)+n, nil)
	cs.refuse(be)
	return fmt.Errorf("%s would visit more elements than the steps left (%d): %w", what, cs.stepsLeft(), be)
}

// compareSize counts the elements a comparison of v with a value of the same shape may
// visit, to depth levels, stopping once the count passes limit. Request views and records
// count as their realised copies.
func compareSize(v starlark.Value, depth int, limit int64) int64 {
	c := comparer{limit: limit}
	c.add(v, depth)
	return c.n
}

type comparer struct{ limit, n int64 }

func (c *comparer) add(v starlark.Value, depth int) {
	c.n++
	if depth <= 0 {
		return
	}
	switch x := v.(type) {
	case starlark.Tuple:
		for i := 0; i < len(x) && c.n <= c.limit; i++ {
			c.add(x[i], depth-1)
		}
	case *starlark.List:
		for i := 0; i < x.Len() && c.n <= c.limit; i++ {
			c.add(x.Index(i), depth-1)
		}
	case *starlark.Dict:
		for k, e := range x.Entries() {
			if c.n > c.limit {
				break
			}
			// Dict equality looks each key up in the other dict: a hash of the key.
			h, _ := hashSize(k, c.limit-c.n)
			c.n += h
			c.add(e, depth-1)
		}
	case *listView, *mapView, *record:
		c.n--
		c.add(realise(v), depth)
	}
}

// hashSize counts the elements hashing v visits, stopping once the count passes limit, and
// reports whether it met a tuple nested more than maxKeyDepth levels deep (then the count
// passes limit too).
func hashSize(v starlark.Value, limit int64) (n int64, deep bool) {
	h := hasher{limit: limit}
	h.add(v, maxKeyDepth)
	return h.n, h.deep
}

type hasher struct {
	limit, n int64
	deep     bool
}

func (h *hasher) add(v starlark.Value, depth int) {
	h.n++
	t, ok := v.(starlark.Tuple)
	if !ok {
		return
	}
	if depth <= 0 {
		h.deep, h.n = true, h.limit+1
		return
	}
	for _, e := range t {
		if h.n > h.limit {
			return
		}
		h.add(e, depth-1)
	}
}

// checkCompare refuses comparing x and y (op, already realised) when it may visit more
// elements than the steps left.
func checkCompare(t *starlark.Thread, op syntax.Token, x, y starlark.Value) error {
	if !isContainer(x) || !isContainer(y) {
		if op == syntax.IN || op == syntax.NOT_IN {
			return checkMembership(t, x, y)
		}
		return nil
	}
	if op == syntax.IN || op == syntax.NOT_IN {
		return checkMembership(t, x, y)
	}
	if op == syntax.EQL || op == syntax.NEQ {
		if starlark.Len(x) != starlark.Len(y) {
			return nil // unequal lengths: go.starlark.net answers without comparing elements
		}
	}
	cs := stateOf(t)
	left := cs.stepsLeft()
	n := compareSize(x, starlark.CompareLimit, left)
	if n > left {
		if m := compareSize(y, starlark.CompareLimit, left); m <= left {
			return nil
		}
		return cs.refuseWork("comparison", n)
	}
	return nil
}

// checkMembership refuses x in y when looking x up visits more elements than the steps
// left: a hash of x for a dict, a comparison with every element for a list or tuple.
func checkMembership(t *starlark.Thread, x, y starlark.Value) error {
	cs := stateOf(t)
	left := cs.stepsLeft()
	switch y.(type) {
	case *starlark.Dict, *record, *mapView:
		if n, deep := hashSize(x, left); deep {
			return errKeyTooDeep
		} else if n > left {
			return cs.refuseWork("dict lookup", n)
		}
	case *starlark.List, starlark.Tuple, *listView:
		if !isContainer(x) {
			return nil
		}
		if n := compareSize(y, starlark.CompareLimit+1, left); n > left {
			return cs.refuseWork("membership test", n)
		}
	}
	return nil
}

// checkOrdering refuses sorting elems (or taking their min or max), which compares each
// about log2(n) times, when that may visit more elements than the steps left.
func checkOrdering(t *starlark.Thread, name string, elems starlark.Indexable) error {
	n := elems.Len()
	if n < 2 {
		return nil
	}
	cs := stateOf(t)
	left := cs.stepsLeft()
	per := int64(bits.Len(uint(n)) + 1)
	var total int64
	for i := 0; i < n && total <= left; i++ {
		if e := elems.Index(i); isContainer(e) {
			total += per * compareSize(e, starlark.CompareLimit, left/per+1)
		}
	}
	if total > left {
		return cs.refuseWork(name, total)
	}
	return nil
}

// isContainer reports whether comparing v may recurse.
func isContainer(v starlark.Value) bool {
	switch v.(type) {
	case starlark.Tuple, *starlark.List, *starlark.Dict, *listView, *mapView, *record:
		return true
	}
	return false
}

// guardKey is the check of a value used as a dict key or looked up (d[k], d[k] = v, {k: v},
// d.get(k), d.pop(k), d.setdefault(k)), which the rewrite wraps around key expressions that
// are not scalars: a tuple is refused when hashing it visits more elements than the steps
// left, or nests deeper than maxKeyDepth; a long string reserves what quoting it in a
// "key not in dict" error may take. It returns the key.
func guardKey(t *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	k := args[0]
	switch x := k.(type) {
	case starlark.Tuple:
		cs := stateOf(t)
		left := cs.stepsLeft()
		if n, deep := hashSize(x, left); deep {
			return nil, errKeyTooDeep
		} else if n > left {
			return nil, cs.refuseWork("hashing the key", n)
		}
	case starlark.String:
		if len(x) > scripting.SmallAlloc {
			// go.starlark.net quotes the key, up to four bytes per byte, and copies the
			// message on its way out.
			if err := stateOf(t).reserve(cost.Mul(int64(len(x)), 12)); err != nil {
				return nil, err
			}
		}
	}
	return k, nil
}
