//go:build race

package serverlog

const raceEnabled = true
