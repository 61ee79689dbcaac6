// Package cost holds what both adapters' guards charge for the values their interpreters
// allocate, and the saturating arithmetic that combines such estimates: an estimate that
// overflows must refuse the operation, not wrap around to a small number that passes.
package cost

import "math"

// Element is what one element of a list or array costs at least: one interface value
// (starlark.Value, goja.Value).
const Element = 16

// SplitPiece is what one piece of a string split costs: the string in the Go slice the
// interpreter splits into, the boxed string and its slot in the result (the characters are
// shared with the string split).
const SplitPiece = 48

// Mul is a*b saturating at math.MaxInt64, for non-negative a and b.
func Mul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// Add is a+b saturating at math.MaxInt64, for non-negative a and b.
func Add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
