//go:build !race

package isolated_test

const raceEnabled = false
