package cost

import (
	"math"
	"testing"
)

func TestSaturates(t *testing.T) {
	for _, c := range []struct{ a, b, mul, add int64 }{
		{0, math.MaxInt64, 0, math.MaxInt64},
		{3, 4, 12, 7},
		{math.MaxInt64 / 2, 3, math.MaxInt64, math.MaxInt64/2 + 3},
		{math.MaxInt64, 1, math.MaxInt64, math.MaxInt64},
	} {
		if got := Mul(c.a, c.b); got != c.mul {
			t.Errorf("Mul(%d, %d) = %d, want %d", c.a, c.b, got, c.mul)
		}
		if got := Add(c.a, c.b); got != c.add {
			t.Errorf("Add(%d, %d) = %d, want %d", c.a, c.b, got, c.add)
		}
	}
}
