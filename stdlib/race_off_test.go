//go:build !race

package stdlib_test

// raceEnabled: see TestHostileCalls.
const raceEnabled = false
