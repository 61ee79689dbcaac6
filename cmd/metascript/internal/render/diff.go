package render

import (
	"fmt"
	"strings"
)

// unifiedDiff is the unified diff (3 lines of context) turning text a, labelled from, into
// b, labelled to; empty when they are equal. Lines are compared whole, by a longest common
// subsequence: the objects a render prints are small enough for its quadratic cost.
func unifiedDiff(from, to, a, b string) string {
	if a == b {
		return ""
	}
	x, y := lines(a), lines(b)
	ops := editScript(x, y)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	const context = 3
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: from context lines before this change to context lines after the last
		// change that is no more than 2*context lines of equal text further.
		start := max(0, i-context)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j
			} else if j-end > 2*context {
				break
			}
		}
		end = min(len(ops), end+context+1)
		ai, bi := ops[start].a, ops[start].b
		var na, nb int
		var body strings.Builder
		for _, op := range ops[start:end] {
			body.WriteString(string(op.kind) + op.text + "\n")
			if op.kind != '+' {
				na++
			}
			if op.kind != '-' {
				nb++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n%s", hunkRange(ai, na), hunkRange(bi, nb), body.String())
		i = end
	}
	return out.String()
}

// hunkRange is a hunk's range of lines: its first line (1-based) and count, "start,count";
// an empty range names the line before it.
func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// diffOp is one line of an edit script: kept (' '), removed ('-') or added ('+'); a and b
// are the 0-based line numbers in each text where it stands.
type diffOp struct {
	kind byte
	text string
	a, b int
}

// editScript turns x into y, keeping a longest common subsequence of lines.
func editScript(x, y []string) []diffOp {
	// lcs[i][j] is the length of the LCS of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, diffOp{' ', x[i], i, j})
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] > lcs[i+1][j]):
			ops = append(ops, diffOp{'+', y[j], i, j})
			j++
		default:
			ops = append(ops, diffOp{'-', x[i], i, j})
			i++
		}
	}
	return ops
}
