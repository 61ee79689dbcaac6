// Package bench holds the cross-language hook benchmarks: the same sync logic as a plain Go
// function (the floor), as inline Starlark and JavaScript through the public scripting API
// (conversion included), the same inline hooks in the isolated tier's worker process, and as
// a webhook on loopback with JSON, at 10 and 1000 children; what goja alone costs for the
// same JavaScript, the floor of any inline JavaScript (BenchmarkSyncFloor); and how quickly
// each budget stops a hostile hook. Run them with `make bench-hooks`.
package bench
