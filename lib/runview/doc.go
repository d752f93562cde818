// Package runview is what generate shows of a run while it goes on: the
// progress on stderr (progress.go: a live bar on a terminal, plain lines
// in a log, and the console that keeps other lines off the bar), the
// --status-file (status.go) and the --metrics-listen endpoint (metrics.go).
// Each reads only the engine's snapshot (engine.Snapshot), a plain value:
// a view cannot change the run, and a new view needs nothing of the
// engine's internals.
package runview
