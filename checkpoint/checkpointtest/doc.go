// Package checkpointtest provides an in-memory checkpoint.Saver with the
// fencing of the real queue, for tests of handlers and of the runtime.
package checkpointtest
