//go:build race

package isolated_test

// raceEnabled: the race detector's shadow memory counts against a worker's RLIMIT_AS.
const raceEnabled = true
