// Hostile hooks for BenchmarkRunaway, one function per budget.
function loop(request) { for (;;) {} }
function recurse(request) { return recurse(request); }
function grow(request) { var s = "x"; for (;;) { s = s + s; } }
